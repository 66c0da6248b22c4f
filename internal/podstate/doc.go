// Package podstate reads facts off a member Pod that both controllers judge by: whether it runs,
// whether its Ready condition is True, whether it serves, and when its etcd container started.
// One definition each, so the two controllers never disagree about what "Ready" means.
package podstate
