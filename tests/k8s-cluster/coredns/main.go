// CoreDNS with only the plugins bench/k8s-local.sh needs (bind, errors, log, kubernetes): the cluster's DNS, whose
// records for the headless Service's pods the shards' barrier name resolves through. A build with fewer plugins, as
// CoreDNS documents it.
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
