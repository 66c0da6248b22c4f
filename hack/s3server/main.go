// Command s3server runs SeaweedFS's `weed server -s3` for tests; see doc.go.
package main

import (
	"fmt"
	"os"

	"github.com/seaweedfs/seaweedfs/weed/command"
	flag "github.com/seaweedfs/seaweedfs/weed/util/fla9"
	util_http "github.com/seaweedfs/seaweedfs/weed/util/http"
)

// defaults come before the caller's arguments, which may override them.
var defaults = []string{
	"-ip=127.0.0.1",
	"-ip.bind=127.0.0.1",
	"-s3",
	"-s3.iam=false",
	"-s3.autoCreateBucket=false",
	"-s3.port.iceberg=0",
	"-s3.port.lance=0",
	"-master.telemetry=false",
	"-volume.preStopSeconds=0",
}

// globalFlags are glog's settings on SeaweedFS's global flag set.
var globalFlags = map[string]string{
	"logtostderr": "true",
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "s3server:", err)
		os.Exit(2)
	}
	// `weed server` blocks until a signal ends the process; returning means it refused its flags.
	os.Exit(1)
}

// run starts `weed server` with defaults followed by args; it returns only when the command
// returns, which it does only on bad flags.
func run(args []string) error {
	for name, value := range globalFlags {
		if err := flag.Set(name, value); err != nil {
			return fmt.Errorf("setting -%s: %w", name, err)
		}
	}
	var server *command.Command
	for _, c := range command.Commands {
		if c.Name() == "server" {
			server = c
		}
	}
	if server == nil || server.Run == nil {
		return fmt.Errorf("SeaweedFS has no runnable \"server\" command")
	}
	if err := server.Flag.Parse(append(append([]string(nil), defaults...), args...)); err != nil {
		return err
	}
	util_http.InitGlobalHttpClient()
	if !server.Run(server, server.Flag.Args()) {
		server.Flag.PrintDefaults()
		return fmt.Errorf("weed server refused its arguments")
	}
	return nil
}
