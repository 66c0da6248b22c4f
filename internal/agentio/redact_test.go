package agentio

import (
	"errors"
	"strings"
	"testing"

	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	err := Redact(snapshot.Failf(snapshot.ReasonAccessDenied, "signing with s3cr3t failed: %w", errors.New("injected failure")), []string{"", "s3cr3t"})
	if strings.Contains(err.Error(), "s3cr3t") || snapshot.ReasonOf(err) != snapshot.ReasonAccessDenied {
		t.Errorf("Redact = %v (%s)", err, snapshot.ReasonOf(err))
	}
	if Redact(nil, []string{"x"}) != nil {
		t.Error("Redact(nil) is not nil")
	}
}
