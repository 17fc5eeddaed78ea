// Command envup starts a real control plane (kube-apiserver + etcd via envtest), installs the
// project's CRDs, creates N labelled Nodes and M non-conflicting RBLNDrivers, writes a
// kubeconfig, and runs until SIGTERM. Built with the project's go.mod by hack/perf/run.sh and
// hack/perf/paired.sh.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

func main() {
	nodes := flag.Int("nodes", 100, "nodes")
	drivers := flag.Int("drivers", 10, "RBLNDrivers (including the default)")
	crds := flag.String("crds", "config/crd/bases", "CRD directory")
	kc := flag.String("out", "kubeconfig", "kubeconfig to write")
	flag.Parse()
	env := &envtest.Environment{CRDDirectoryPaths: []string{*crds}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	must(err)
	defer func() { _ = env.Stop() }()
	cfg.QPS, cfg.Burst = 2000, 4000
	cs := kubernetes.NewForConfigOrDie(cfg)
	cl, err := client.New(cfg, client.Options{})
	must(err)
	ctx := context.Background()
	kernels := []string{"6.8.0-90-generic", "6.8.0-94-generic", "6.8.0-45-generic", "5.15.0-130-generic", "6.8.0-101-generic"}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := 0; i < *nodes; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			fam := []string{"atom", "rebel"}[i%2]
			osv := []string{"22.04", "24.04"}[(i/2)%2]
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("npu-%05d", i), Labels: map[string]string{
				"rebellions.ai/npu.deploy.driver":                         "true",
				"rebellions.ai/npu.family":                                fam,
				"feature.node.kubernetes.io/system-os_release.ID":         "ubuntu",
				"feature.node.kubernetes.io/system-os_release.VERSION_ID": osv,
				"feature.node.kubernetes.io/kernel-version.full":          kernels[i%len(kernels)],
				"rack":                             fmt.Sprintf("r%d", i%50),
				"topology.kubernetes.io/zone":      fmt.Sprintf("zone-%d", i%3),
				"kubernetes.io/hostname":           fmt.Sprintf("npu-%05d", i),
				"node.kubernetes.io/instance-type": "rbln-npu-8x",
			}}}
			if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
				must(err)
			}
		}(i)
	}
	wg.Wait()
	mk := func(name string, sel map[string]any) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "rebellions.ai/v1alpha1", "kind": "RBLNDriver",
			"metadata": map[string]any{"name": name},
			"spec": map[string]any{"registry": "repo.rebellions.ai", "image": "rebellions/rbln-driver", "version": "3.2.2",
				"smd":          map[string]any{"registry": "repo.rebellions.ai", "image": "rebellions/rbln-smd"},
				"manager":      map[string]any{"registry": "docker.io", "image": "rebellions/rbln-k8s-driver-manager", "version": "v0.2.2"},
				"nodeSelector": sel},
		}}
		must(cl.Create(ctx, u))
	}
	mk("rbln-driver", map[string]any{})
	for i := 1; i < *drivers; i++ {
		// atom racks, one driver each; the request under test targets rebel nodes.
		mk(fmt.Sprintf("rbln-driver-d%04d", i), map[string]any{"rebellions.ai/npu.family": "atom", "rack": fmt.Sprintf("r%d", i%50), "slot": fmt.Sprintf("s%d", i)})
	}
	// kubeconfig with the envtest user's client certificate.
	kcfg := clientcmdapi.NewConfig()
	kcfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kcfg.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kcfg.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	kcfg.CurrentContext = "envtest"
	must(clientcmd.WriteToFile(*kcfg, *kc))
	fmt.Printf("ready nodes=%d drivers=%d kubeconfig=%s\n", *nodes, *drivers, *kc)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "envup:", err)
		os.Exit(1)
	}
}
