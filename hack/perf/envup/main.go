// Command envup starts a real control plane (kube-apiserver + etcd via envtest), installs the
// project's CRDs, creates N labelled Nodes and M non-conflicting RBLNDrivers, writes a
// kubeconfig, and runs until SIGTERM. Built with the project's go.mod by hack/perf/run.sh,
// hack/perf/paired.sh and hack/bench-scale.sh. With -labels fleet each node carries what a real
// fleet's nodes do (~60 labels: NFD, cloud and topology, kubelet, the operator's; and the usual
// annotations; see fleetNode); -report-crd also installs openreports' ClusterReport CRD (serve
// --audit).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

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
	labels := flag.String("labels", "minimal", "the nodes' labels: minimal (9 labels, what the checks read) or fleet (~60 labels and the annotations of a real fleet's nodes)")
	reportCRD := flag.String("report-crd", "", "also install this CRD file (openreports' ClusterReport, for serve --audit)")
	workers := flag.Int("workers", 32, "concurrent creates")
	flag.Parse()
	if *labels != "minimal" && *labels != "fleet" {
		must(fmt.Errorf("-labels %q: minimal or fleet", *labels))
	}
	crdPaths := []string{*crds}
	if *reportCRD != "" {
		crdPaths = append(crdPaths, *reportCRD)
	}
	env := &envtest.Environment{CRDDirectoryPaths: crdPaths, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	must(err)
	defer func() { _ = env.Stop() }()
	cfg.QPS, cfg.Burst = 5000, 10000
	cs := kubernetes.NewForConfigOrDie(cfg)
	cl, err := client.New(cfg, client.Options{})
	must(err)
	ctx := context.Background()
	start := time.Now()
	var created atomic.Int64
	parallel(*nodes, *workers, func(i int) {
		n := minimalNode(i)
		if *labels == "fleet" {
			n = fleetNode(i)
		}
		_, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		must(err)
		if c := created.Add(1); c%20000 == 0 {
			fmt.Fprintf(os.Stderr, "envup: %d nodes created (%s)\n", c, time.Since(start).Round(time.Second))
		}
	})
	nodesTook := time.Since(start)
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
	parallel(*drivers-1, *workers, func(i int) {
		// atom racks, one driver each; the request under test targets rebel nodes.
		i++
		mk(fmt.Sprintf("rbln-driver-d%04d", i), map[string]any{"rebellions.ai/npu.family": "atom", "rack": fmt.Sprintf("r%d", i%50), "slot": fmt.Sprintf("s%d", i)})
	})
	// kubeconfig with the envtest user's client certificate.
	kcfg := clientcmdapi.NewConfig()
	kcfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kcfg.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kcfg.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	kcfg.CurrentContext = "envtest"
	must(clientcmd.WriteToFile(*kcfg, *kc))
	perNode := 0
	if *nodes > 0 {
		perNode = len(minimalNode(0).Labels)
		if *labels == "fleet" {
			perNode = len(fleetNode(0).Labels)
		}
	}
	fmt.Printf("ready nodes=%d drivers=%d kubeconfig=%s labels=%s labels-per-node=%d nodes-created-in=%s\n",
		*nodes, *drivers, *kc, *labels, perNode, nodesTook.Round(100*time.Millisecond))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}

// parallel runs f(0..n-1) on workers goroutines.
func parallel(n, workers int, f func(int)) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Go(func() {
			for i := range work {
				f(i)
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
}

// minimalNode is node i with what the checks read (paired.sh's and run.sh's nodes).
func minimalNode(i int) *corev1.Node {
	kernels := []string{"6.8.0-90-generic", "6.8.0-94-generic", "6.8.0-45-generic", "5.15.0-130-generic", "6.8.0-101-generic"}
	fam := []string{"atom", "rebel"}[i%2]
	osv := []string{"22.04", "24.04"}[(i/2)%2]
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("npu-%05d", i), Labels: map[string]string{
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
}

// An operating system image of the fleet: os-release and the kernels its nodes run.
type osImage struct {
	id, version string
	kernels     []string
}

var fleetOS = []osImage{
	{"ubuntu", "22.04", []string{"5.15.0-130-generic", "6.8.0-90-generic"}},
	{"ubuntu", "24.04", []string{"6.8.0-90-generic", "6.8.0-94-generic", "6.8.0-101-generic"}},
	{"rhel", "9.4", []string{"5.14.0-427.13.1.el9_4.x86_64", "5.14.0-427.42.1.el9_4.x86_64"}},
}

// The CPU flags NFD's cpu-cpuid source labels on the fleet's two CPU models.
var (
	cpuidCommon = []string{"ADX", "AESNI", "AVX", "AVX2", "BMI1", "BMI2", "CMPXCHG8", "FMA3", "FXSR", "FXSROPT",
		"LAHF", "MOVBE", "OSXSAVE", "SHA", "SSE3", "SSE4", "SSE42", "SSSE3", "SYSCALL", "SYSEE", "VAES", "VPCLMULQDQ", "X87", "XGETBV1", "XSAVE", "XSAVEC", "XSAVEOPT", "XSAVES"}
	cpuidIntel = []string{"AVX512BW", "AVX512CD", "AVX512DQ", "AVX512F", "AVX512VL", "AVX512VNNI", "AMXBF16", "AMXINT8", "AMXTILE"}
	cpuidAMD   = []string{"AVX512BW", "AVX512CD", "AVX512DQ", "AVX512F", "AVX512VL", "AVX512VNNI", "SEV", "SME"}
)

// fleetNode is node i as a real fleet's node is labelled: the kubelet's labels (hostname, os,
// arch, beta.*), the cloud's (region, zone, instance type, the failure-domain.beta.* twins, a
// node group), NFD's (kernel, os-release, CPU model and flags, PCI devices, memory, storage),
// the operator's (rebellions.ai/npu.deploy.driver, npu.family from three families,
// npu.deploy.rbln-smd) and a rack label, about 60 in all, with few distinct values per key
// across the fleet; and the annotations the kubelet, the attach-detach controller and NFD
// write. The family and rack keep paired.sh's pattern (the request under test selects rebel
// nodes of rack r7; envup's drivers select atom racks).
func fleetNode(i int) *corev1.Node {
	name := fmt.Sprintf("npu-%05d", i)
	fam := []string{"atom", "rebel", "atom-max", "rebel"}[i%4]
	img := fleetOS[(i/4)%len(fleetOS)]
	kernel := img.kernels[(i/12)%len(img.kernels)]
	region := []string{"ap-northeast-2", "us-west-2"}[(i/1000)%2]
	zone := region + string(rune('a'+(i/7)%3))
	itype := map[string]string{"atom": "rbln-ca22.8xlarge", "atom-max": "rbln-ca25.8xlarge", "rebel": "rbln-rebel.16xlarge"}[fam]
	intel := i%3 != 0
	l := map[string]string{
		"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/instance-type": itype,
		"node.kubernetes.io/instance-type": itype, "node-role.kubernetes.io/worker": "",
		"topology.kubernetes.io/region": region, "topology.kubernetes.io/zone": zone,
		"failure-domain.beta.kubernetes.io/region": region, "failure-domain.beta.kubernetes.io/zone": zone,
		"node.kubernetes.io/nodegroup": "npu-" + fam + "-" + strconv.Itoa((i/50)%8),

		"rebellions.ai/npu.deploy.driver": "true", "rebellions.ai/npu.family": fam,
		"rebellions.ai/npu.deploy.rbln-smd": "true", "rack": fmt.Sprintf("r%d", i%50),

		"feature.node.kubernetes.io/kernel-version.full":          kernel,
		"feature.node.kubernetes.io/system-os_release.ID":         img.id,
		"feature.node.kubernetes.io/system-os_release.VERSION_ID": img.version,
		"feature.node.kubernetes.io/cpu-hardware_multithreading":  "true",
		"feature.node.kubernetes.io/cpu-pstate.status":            "active", "feature.node.kubernetes.io/cpu-pstate.turbo": "true",
		"feature.node.kubernetes.io/cpu-model.family":    "6",
		"feature.node.kubernetes.io/kernel-config.NO_HZ": "true", "feature.node.kubernetes.io/kernel-config.NO_HZ_IDLE": "true",
		"feature.node.kubernetes.io/memory-numa": "true", "feature.node.kubernetes.io/storage-nonrotationaldisk": "true",
		"feature.node.kubernetes.io/pci-1eff.present":      "true", // Rebellions' PCI vendor ID: the NPUs
		"feature.node.kubernetes.io/pci-0200_15b3.present": "true", // the network cards
		"feature.node.kubernetes.io/pci-0300_1a03.present": "true", // the BMC's VGA
		"feature.node.kubernetes.io/network-sriov.capable": "true",
	}
	major, rest, _ := strings.Cut(kernel, ".")
	minor, rest, _ := strings.Cut(rest, ".")
	rev, _, _ := strings.Cut(rest, "-")
	l["feature.node.kubernetes.io/kernel-version.major"] = major
	l["feature.node.kubernetes.io/kernel-version.minor"] = minor
	l["feature.node.kubernetes.io/kernel-version.revision"] = rev
	vmaj, vmin, _ := strings.Cut(img.version, ".")
	l["feature.node.kubernetes.io/system-os_release.VERSION_ID.major"] = vmaj
	l["feature.node.kubernetes.io/system-os_release.VERSION_ID.minor"] = vmin
	flags := cpuidAMD
	l["feature.node.kubernetes.io/cpu-model.vendor_id"], l["feature.node.kubernetes.io/cpu-model.id"] = "AMD", "17"
	if intel {
		flags = cpuidIntel
		l["feature.node.kubernetes.io/cpu-model.vendor_id"], l["feature.node.kubernetes.io/cpu-model.id"] = "Intel", "143"
	}
	for _, f := range slices.Concat(flags, cpuidCommon) { // the model's own flags first
		if len(l) >= 60 {
			break
		}
		l["feature.node.kubernetes.io/cpu-cpuid."+f] = "true"
	}
	nfd := make([]string, 0, len(l))
	for k := range l {
		if k, ok := strings.CutPrefix(k, "feature.node.kubernetes.io/"); ok {
			nfd = append(nfd, k)
		}
	}
	slices.Sort(nfd)
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{
		"node.alpha.kubernetes.io/ttl":                           "0",
		"volumes.kubernetes.io/controller-managed-attach-detach": "true",
		"kubeadm.alpha.kubernetes.io/cri-socket":                 "unix:///run/containerd/containerd.sock",
		"nfd.node.kubernetes.io/feature-labels":                  strings.Join(nfd, ","),
		"nfd.node.kubernetes.io/worker.version":                  "v0.16.4",
		"csi.volume.kubernetes.io/nodeid":                        `{"ebs.csi.aws.com":"i-0` + fmt.Sprintf("%016x", i*7919) + `"}`,
	}}}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "envup:", err)
		os.Exit(1)
	}
}
