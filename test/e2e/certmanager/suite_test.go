//go:build e2e

package certmanager

import (
	"os"
	"testing"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

func TestMain(m *testing.M) { os.Exit(framework.Main(m)) }
