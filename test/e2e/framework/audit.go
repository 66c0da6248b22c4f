package framework

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"
)

// AuditEvent is the part of a kube-apiserver audit event (audit.k8s.io/v1, one JSON object
// per line of the log) that says who wrote what.
type AuditEvent struct {
	// AuditID identifies the request; a long-running one logs a ResponseStarted and a
	// ResponseComplete event under the same ID.
	AuditID string `json:"auditID"`
	// Stage is ResponseStarted, ResponseComplete or Panic (the local cluster omits
	// RequestReceived).
	Stage string `json:"stage"`
	// Verb is the API verb: create, update, patch, delete, deletecollection, ...
	Verb string `json:"verb"`
	// RequestURI is the request's path and query.
	RequestURI string `json:"requestURI"`
	// User is who made the request.
	User struct {
		// Username is, for a ServiceAccount, system:serviceaccount:<namespace>:<name>.
		Username string `json:"username"`
		// Extra holds, for a Pod's bound token, authentication.kubernetes.io/pod-name.
		Extra map[string][]string `json:"extra,omitempty"`
	} `json:"user"`
	// UserAgent is the client's User-Agent.
	UserAgent string `json:"userAgent,omitempty"`
	// ObjectRef is the object written; nil for non-resource requests.
	ObjectRef *struct {
		Resource    string `json:"resource,omitempty"`
		Namespace   string `json:"namespace,omitempty"`
		Name        string `json:"name,omitempty"`
		APIGroup    string `json:"apiGroup,omitempty"`
		Subresource string `json:"subresource,omitempty"`
	} `json:"objectRef,omitempty"`
	// ResponseStatus carries the HTTP status code of the answer.
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus,omitempty"`
	// RequestReceivedTimestamp is when the API server received the request.
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
}

// ServiceAccountUsername is the name a ServiceAccount's requests are audited under.
func ServiceAccountUsername(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// Namespace is the written object's namespace; "" for cluster-scoped objects.
func (e AuditEvent) Namespace() string {
	if e.ObjectRef == nil {
		return ""
	}
	return e.ObjectRef.Namespace
}

// Resource is the written resource with its subresource and API group, e.g.
// "etcdclusters/status.etcd-operator.cozystack.io" or "pods" (core group).
func (e AuditEvent) Resource() string {
	if e.ObjectRef == nil {
		return "(non-resource)"
	}
	r := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		r += "/" + e.ObjectRef.Subresource
	}
	if e.ObjectRef.APIGroup != "" {
		r += "." + e.ObjectRef.APIGroup
	}
	return r
}

// Describe says what the request did, for a test log: "patch etcdclusters/status.<group>
// ns/name → 200".
func (e AuditEvent) Describe() string {
	target := e.RequestURI
	if e.ObjectRef != nil {
		target = e.ObjectRef.Name
		if e.ObjectRef.Namespace != "" {
			target = e.ObjectRef.Namespace + "/" + target
		}
	}
	code := "no response"
	if e.ResponseStatus != nil {
		code = strconv.Itoa(e.ResponseStatus.Code)
	}
	return fmt.Sprintf("%s %s %s → %s", e.Verb, e.Resource(), target, code)
}

// ReadAuditEvents returns, in log order, the requests of username that the API server
// received in [from, to), once per request (the last event of its ID), from the audit log
// files given oldest first (the cluster tool's AuditLogFiles). Files last written before from
// are skipped: rotation only renames files, so they hold nothing newer.
func ReadAuditEvents(files []string, from, to time.Time, username string) ([]AuditEvent, error) {
	// Lines of other users are skipped before decoding: the log holds every write of the
	// cluster, the kubelets' heartbeats included.
	needle, err := json.Marshal(username)
	if err != nil {
		return nil, err
	}
	needle = append([]byte(`"username":`), needle...)
	var events []AuditEvent
	index := map[string]int{}
	for _, path := range files {
		st, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		if st.ModTime().Before(from) {
			continue
		}
		if err := scanAuditFile(path, needle, func(e AuditEvent) {
			if e.User.Username != username || e.RequestReceivedTimestamp.Before(from) || !e.RequestReceivedTimestamp.Before(to) {
				return
			}
			if i, ok := index[e.AuditID]; ok {
				events[i] = e
				return
			}
			index[e.AuditID] = len(events)
			events = append(events, e)
		}); err != nil {
			return nil, err
		}
	}
	return events, nil
}

func scanAuditFile(path string, needle []byte, add func(AuditEvent)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 256<<10), 16<<20)
	// A line that does not decode is an error unless it is the last one, which the API
	// server may be writing right now.
	var bad error
	for line := 1; sc.Scan(); line++ {
		if bad != nil {
			return bad
		}
		if !bytes.Contains(sc.Bytes(), needle) {
			continue
		}
		var e AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			bad = fmt.Errorf("%s:%d: %w", path, line, err)
			continue
		}
		add(e)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
