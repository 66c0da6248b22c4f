package v1alpha2

// ManagedTLS asks the operator to be the cluster's certificate authority. It runs two CAs, in
// Secrets <cluster>-ca (signs the server certificate and the operator's client certificate; you
// may sign your applications' client certificates with it) and <cluster>-peer-ca (signs peer
// certificates only, so no client certificate is ever accepted on the peer port), and issues
// Secrets <cluster>-server-tls, <cluster>-peer-tls and <cluster>-operator-client-tls, renewed
// before they expire without restarting members. The CAs are rotated in their last third, or
// when the EtcdCluster's etcd-operator.cozystack.io/rotate-ca annotation takes a new value. A
// cluster on your own Secrets may move to managed; the members keep working throughout. It
// has no fields yet.
type ManagedTLS struct{}
