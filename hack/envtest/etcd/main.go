// Command etcd is the etcd server used by Tollgate's envtest suites, built from Go module sources.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
