// Package portforward forwards a loopback port to a Pod's port through the API server (the
// same SPDY port-forward as kubectl port-forward), for the command-line tools that reach etcd
// from a person's machine: kubectl-etcd and etcd-migrate.
package portforward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientportforward "k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// Forward is one port-forward from a loopback port to a Pod's port.
type Forward struct {
	localPort int
	stopCh    chan struct{}
	done      chan struct{}
}

// Open forwards a free loopback port to port of Pod ns/name, through the API server, and
// returns once the local port listens.
func Open(ctx context.Context, cfg *rest.Config, ns, name string, port int) (*Forward, error) {
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
	f := &Forward{stopCh: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan struct{})
	pf, err := clientportforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, f.stopCh, ready, io.Discard, io.Discard)
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
		f.Close()
		return nil, ctx.Err()
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) != 1 {
		f.Close()
		return nil, errors.Join(errors.New("the port-forward reported no local port"), err)
	}
	f.localPort = int(ports[0].Local)
	return f, nil
}

// LocalPort is the loopback port that forwards to the Pod.
func (f *Forward) LocalPort() int { return f.localPort }

// Close stops the forward and waits for it to end; it may be called more than once.
func (f *Forward) Close() {
	select {
	case <-f.stopCh:
	default:
		close(f.stopCh)
	}
	<-f.done
}
