package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// forward is one port-forward from a loopback port to a Pod's port.
type forward struct {
	localPort int
	stopCh    chan struct{}
	done      chan struct{}
}

// open forwards a free loopback port to port of Pod ns/name, through the API server, and
// returns once the local port listens.
func open(ctx context.Context, cfg *rest.Config, ns, name string, port int) (*forward, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, err
	}
	u := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(name).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	f := &forward{stopCh: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan struct{})
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, f.stopCh, ready, io.Discard, io.Discard)
	if err != nil {
		return nil, err
	}
	failed := make(chan error, 1)
	go func() {
		defer close(f.done)
		if err := pf.ForwardPorts(); err != nil {
			failed <- err
		}
	}()
	select {
	case <-ready:
	case err := <-failed:
		return nil, err
	case <-ctx.Done():
		f.close()
		return nil, ctx.Err()
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) != 1 {
		f.close()
		return nil, errors.Join(errors.New("the port-forward reported no local port"), err)
	}
	f.localPort = int(ports[0].Local)
	return f, nil
}

func (f *forward) close() {
	select {
	case <-f.stopCh:
	default:
		close(f.stopCh)
	}
	<-f.done
}
