// Package traffic generates client write traffic against etcd while a test disrupts the
// cluster, records the client-observed history for the linearizability checker, and measures
// what users would notice: acknowledged writes that went missing and the longest gap between
// successful writes.
//
// The workload is a small set of keys used as registers. Each client puts unique values
// ("<client>-<sequence>") and issues linearizable gets; unique values let every read name the
// write it saw. Traffic is bounded in request count, duration and rate, and each request has
// its own timeout, so a stuck cluster shows up as unknown outcomes and a write gap, never as a
// hung test.
//
// # Acknowledged writes missing
//
// A put is acknowledged when the client received a successful response. After traffic stops
// (every client call has returned), the generator reads every key with a linearizable get
// (retried, bounded). For each key with final value F, an acknowledged put P of value V is
// missing unless:
//   - V equals F, or
//   - F was written by a put Q (acknowledged or of unknown outcome) that could have taken
//     effect after P: Q had not returned before P was called (an unknown-outcome Q counts as
//     returning never, since etcd may apply it late).
//
// So an acknowledged put is missing when the final value is absent, is a value no put wrote, or
// was written by a put that completed before P began; P's write then vanished (or was rolled
// back) although the client was told it was durable. The full linearizability check covers the
// reads during traffic; this count is the headline figure for "no acknowledged write lost".
//
// # Write gap
//
// The write gap is the longest interval without a successful put response, measured over the
// acknowledged puts' return times from the start of traffic to its end (both ends included).
package traffic
