package etcdclient

import "context"

// Clients hands out one pooled etcd client per cluster. T is the interface its consumer
// declares for the calls it makes: each controller sees only its own calls (the EtcdMember
// controller, which must never change membership, gets no membership call at all), so the
// compiler enforces what each controller may do (docs/design/house-rules.md, the narrow etcd
// boundary). *Pool is a Clients[Client]; Narrow gives any other T over it.
type Clients[T any] interface {
	// Get returns the client for cluster, dialled with cfg; a changed cfg re-dials.
	Get(ctx context.Context, cluster string, cfg Config) (T, error)
	// Forget closes and drops cluster's client.
	Forget(cluster string) error
	// Pooled returns the client pooled for cluster, whatever it was dialled with, without
	// dialling: after Get failed to authenticate with a changed password, it still holds the
	// session of the old one, through which the new password is set (docs/auth.md).
	Pooled(cluster string) (T, bool)
}

var _ Clients[Client] = (*Pool)(nil)

// Narrow returns a Clients[T] over pool whose clients are pool's, seen only through T. as is
// normally the identity conversion func(c Client) T { return c }, which compiles only when
// Client has every method T lists.
func Narrow[T any](pool Clients[Client], as func(Client) T) Clients[T] {
	return narrowed[T]{pool: pool, as: as}
}

type narrowed[T any] struct {
	pool Clients[Client]
	as   func(Client) T
}

func (n narrowed[T]) Get(ctx context.Context, cluster string, cfg Config) (T, error) {
	c, err := n.pool.Get(ctx, cluster, cfg)
	if err != nil {
		var zero T
		return zero, err
	}
	return n.as(c), nil
}

func (n narrowed[T]) Forget(cluster string) error { return n.pool.Forget(cluster) }

func (n narrowed[T]) Pooled(cluster string) (T, bool) {
	c, ok := n.pool.Pooled(cluster)
	if !ok {
		var zero T
		return zero, false
	}
	return n.as(c), true
}
