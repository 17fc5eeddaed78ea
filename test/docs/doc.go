// Package docs runs every command the README and docs/*.md show, exactly as written, through
// bash: the `$ ` lines of ```console blocks (their output compared with what the block shows)
// and every command line of ```sh, ```bash and ```shell blocks. They run in a sandbox where
// the paths the docs use resolve (the repository's own, the files the docs show, and the files
// they assume a user has, from testdata/workdir), against a real kube-apiserver and etcd with
// driverguard's webhook and the example cluster, with the real driverguard, helm (v3 and v4),
// kubectl, opa and jq on PATH. Commands that cannot run in a test are listed in the test with
// the reason, by their exact text. See docs_test.go.
package docs
