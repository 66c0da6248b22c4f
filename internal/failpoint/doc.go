// Package failpoint stops the operator at a named step, so that crash-consistency tests can
// prove that every step of bootstrap, scale-up and scale-down is safe to be interrupted right
// after it (docs/design/crash-safety.md).
//
// The cluster controller calls Inject with the pass's context and a step name right after every
// etcd mutation and every Kubernetes write of those flows. In production nothing is armed and
// Inject costs a context lookup and one atomic load. When the environment variable EnvVar (or
// Arm, e.g. from a flag) names a step, the process exits right after that step; tests arm an
// in-process action instead (SetAction), for example one that parks the pass's goroutine, and
// then restart the reconciler with a cold cache. Tests that do so for several reconcilers at once
// give each pass a context carrying a Set of its own (NewContext), so that one test's armed step
// never stops another's reconciler.
//
// Names lists every step, so that tests iterate over all of them.
package failpoint
