// Package defrag decides defragmentation runs (docs/defrag.md): which members an EtcdDefrag's
// rule selects, in which order they go (followers by name, the leader last, after leadership
// moved away from it), whether the quorum gate lets the next one go, when a run may start and
// when it is final, and which runs an EtcdDefragPolicy keeps (its slots are internal/cronslot's).
// It is pure: values in, values out; the controllers in internal/controller/etcddefrag act on
// its answers.
package defrag
