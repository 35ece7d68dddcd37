// CoreDNS with only the plugins (bind, errors, log, kubernetes) bench/k8s-local.sh needs (the cluster's DNS: the headless Service's pod records
// that the shards' barrier name resolves through), as CoreDNS documents a build with fewer plugins.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
)

func init() {
	dnsserver.Directives = []string{"bind", "errors", "log", "kubernetes"}
}

func main() {
	coremain.Run()
}
