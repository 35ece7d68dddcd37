module loadgate.local/k8s-cluster/pause

go 1.24.0
