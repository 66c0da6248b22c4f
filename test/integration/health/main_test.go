package health_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/etcd-operator/etcd-operator/test/utils/apiserver"
)

// parallel is how many tests run at once unless -parallel says otherwise: the fixtures of each
// etcd minor wait on their etcd processes, one case after another.
const parallel = 8

func TestMain(m *testing.M) {
	if err := apiserver.DefaultParallel(parallel); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
