//go:build e2e

package framework

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// APIWriteProxy is a reverse proxy to the cluster's API server, in plain HTTP on 127.0.0.1, for
// a process whose kubeconfig points at it: it sees every API write the process makes and can
// stop the process exactly between two of them, with no hook in the product's code
// (docs/e2e-lifecycle.md, "Migration from the legacy operator"). It forwards with the suite's
// own credentials; upgrades (port-forwards) pass through.
type APIWriteProxy struct {
	// Kubeconfig points at the proxy.
	Kubeconfig string

	mu       sync.Mutex
	allow    int
	kill     func()
	writes   []APIWrite
	refused  *APIWrite
	failures []string
}

// APIWrite is one mutating request: its verb, the resource path below the namespace (or the
// group version) and, for a create, the name in its body; Code is the API server's answer.
type APIWrite struct {
	Verb, Resource, Name string
	Code                 int
}

// String is "verb resource/name".
func (w APIWrite) String() string {
	if w.Name == "" {
		return w.Verb + " " + w.Resource
	}
	return w.Verb + " " + w.Resource + " " + w.Name
}

// StartAPIWriteProxy starts the proxy for the test's lifetime and writes its kubeconfig.
func (f *Test) StartAPIWriteProxy() *APIWriteProxy {
	f.T.Helper()
	cfg := rest.CopyConfig(f.RESTConfig)
	// HTTP/1.1 only: an upgrade cannot travel over an HTTP/2 connection, and the proxy hands the
	// upgraded connection through as it is.
	cfg.NextProtos = []string{"http/1.1"}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		f.T.Fatal(err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		f.T.Fatal(err)
	}
	p := &APIWriteProxy{allow: -1}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = rt
	rp.FlushInterval = -1
	srv := httptest.NewServer(p.handler(rp))
	f.T.Cleanup(srv.Close)
	p.Kubeconfig = filepath.Join(f.T.TempDir(), "proxy.kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: srv.URL}
	kc.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy", Namespace: f.Namespace}
	kc.CurrentContext = "proxy"
	if err := clientcmd.WriteToFile(*kc, p.Kubeconfig); err != nil {
		f.T.Fatal(err)
	}
	return p
}

// Arm starts a new count: the proxy forwards allow writes, and when one more arrives it calls
// kill before forwarding it, then fails the request. allow < 0 forwards every write.
func (p *APIWriteProxy) Arm(allow int, kill func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.allow, p.kill, p.writes, p.refused = allow, kill, nil, nil
}

// Taken returns the writes forwarded since Arm, the one refused (nil if none), and requests
// the proxy could not forward.
func (p *APIWriteProxy) Taken() (forwarded []APIWrite, refused *APIWrite, failures []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]APIWrite(nil), p.writes...), p.refused, append([]string(nil), p.failures...)
}

func (p *APIWriteProxy) handler(next *httputil.ReverseProxy) http.Handler {
	next.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		p.mu.Lock()
		p.failures = append(p.failures, r.Method+" "+r.URL.Path+": "+err.Error())
		p.mu.Unlock()
		w.WriteHeader(http.StatusBadGateway)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		verb, ok := WriteVerb(r.Method, r.URL.Path)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		write := APIWrite{Verb: verb, Resource: APIResourcePath(r.URL.Path), Name: createdName(r)}
		p.mu.Lock()
		if p.allow >= 0 && len(p.writes) >= p.allow && p.refused == nil {
			p.refused = &write
			kill := p.kill
			p.mu.Unlock()
			kill()
			http.Error(w, "killed by the test before this write", http.StatusServiceUnavailable)
			return
		}
		p.mu.Unlock()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r)
		write.Code = rec.code
		p.mu.Lock()
		p.writes = append(p.writes, write)
		p.mu.Unlock()
	})
}

// createdName is the metadata.name in a create's JSON body (a create's path does not name the
// object); the body is restored for forwarding.
func createdName(r *http.Request) string {
	if r.Method != http.MethodPost || r.Body == nil {
		return ""
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return ""
	}
	var obj struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if json.Unmarshal(body, &obj) == nil {
		return obj.Metadata.Name
	}
	// Built-in kinds may travel as protobuf, which the client-go scheme decodes.
	decoded, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return ""
	}
	m, err := meta.Accessor(decoded)
	if err != nil {
		return ""
	}
	return m.GetName()
}

// statusRecorder keeps the status code; it unwraps for the reverse proxy's hijack of an
// upgraded connection (http.ResponseController).
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
