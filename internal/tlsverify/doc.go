// Package tlsverify holds the operator's check of an etcd member's certificate. It is a leaf
// (standard library only) so that the tests' own certificate helpers (test/utils/testpki) can
// verify members exactly as the operator does without importing the operator's configuration
// packages, whose tests in turn use those helpers.
package tlsverify
