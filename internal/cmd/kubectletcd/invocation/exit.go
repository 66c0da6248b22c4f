package invocation

import (
	"errors"
	"fmt"
)

// Exit codes (docs/kubectl-etcd.md, "Exit codes").
const (
	// ExitOK is success, or a dry run that printed its plan.
	ExitOK = 0
	// ExitError is any failure that is not one of the others.
	ExitError = 1
	// ExitUsage is a usage error or a missing confirmation.
	ExitUsage = 2
	// ExitRefused is a refusal by a safety check; the message names the rule.
	ExitRefused = 3
)

// CodedError carries the exit code an error ends the run with.
type CodedError struct {
	Code int
	Err  error
}

func (e *CodedError) Error() string { return e.Err.Error() }
func (e *CodedError) Unwrap() error { return e.Err }

// Usagef is a usage error (exit 2).
func Usagef(format string, args ...any) error {
	return &CodedError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// RefusedError is a refusal by a named safety rule (exit 3).
type RefusedError struct {
	// Rule names the check that refused, e.g. "quorum" or "memory-cluster-pause".
	Rule    string
	Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refused by rule %s: %s", e.Rule, e.Message)
}

// Refused is a refusal by rule with message.
func Refused(rule, message string) error { return &RefusedError{Rule: rule, Message: message} }

// Code is the exit code err ends the run with.
func Code(err error) int {
	if err == nil {
		return ExitOK
	}
	if r := (*RefusedError)(nil); errors.As(err, &r) {
		return ExitRefused
	}
	if c := (*CodedError)(nil); errors.As(err, &c) {
		return c.Code
	}
	return ExitError
}
