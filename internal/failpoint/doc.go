// Package failpoint stops the operator at a named step, so that crash-consistency tests can
// prove that every step of bootstrap, scale-up and scale-down is safe to be interrupted right
// after it (docs/design/crash-safety.md).
//
// The cluster controller calls Inject with a step name right after every etcd mutation and every
// Kubernetes write of those flows. In production nothing is armed and Inject costs one atomic
// load. When the environment variable EnvVar (or Arm, e.g. from a flag) names a step, the
// process exits right after that step; tests arm an in-process action instead (SetAction), for
// example a panic that the test recovers, and then restart the reconciler with a cold cache.
//
// Names lists every step, so that tests iterate over all of them.
package failpoint
