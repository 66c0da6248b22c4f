package agentio

import (
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/snapshot"
)

// Redact removes secrets from err's text, keeping its reason: a failure's message reaches the
// termination message, the log and the EtcdSnapshot's or EtcdCluster's status.
func Redact(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	msg := RedactString(err.Error(), secrets)
	if msg == err.Error() {
		return err
	}
	return snapshot.Fail(snapshot.ReasonOf(err), redactedError(msg))
}

// RedactString replaces each secret in s with "[redacted]".
func RedactString(s string, secrets []string) string {
	for _, secret := range secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}

type redactedError string

func (e redactedError) Error() string { return string(e) }
