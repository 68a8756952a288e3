// Command etcd is etcd's server, built from go.etcd.io/etcd/server/v3 at the
// version pinned in this module's go.mod, for the test Kubernetes API server.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
