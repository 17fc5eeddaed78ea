// Command disruption-controller runs Kubernetes' disruption controller
// (k8s.io/kubernetes/pkg/controller/disruption) alone, wired as kube-controller-manager wires
// it (cmd/kube-controller-manager/app/policy.go and controllermanager.go of the same release:
// shared informers, a discovery REST mapper reset every 30 seconds, the scale client, one
// worker). test/plan needs this one controller — it keeps PodDisruptionBudget status, which
// the Eviction API reads — and building it alone takes a fraction of kube-controller-manager's
// cold build, which links every controller, cloud provider and volume plugin.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/disruption"
)

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	workers := flag.Int("concurrent-disruption-syncs", 1, "workers (kube-controller-manager's default)")
	printVersion := flag.Bool("version", false, "print the Kubernetes version it is built from and exit")
	flag.Parse()
	if *printVersion {
		fmt.Println("disruption-controller, Kubernetes", version.Get().GitVersion)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, *kubeconfig, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "disruption-controller:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig string, workers int) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.UserAgent = "disruption-controller"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	restMapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	go wait.Until(restMapper.Reset, 30*time.Second, ctx.Done())
	scaleClient, err := scale.NewForConfig(cfg, restMapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(client.Discovery()))
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(client, 12*time.Hour)
	dc := disruption.NewDisruptionController(ctx,
		factory.Core().V1().Pods(),
		factory.Policy().V1().PodDisruptionBudgets(),
		factory.Core().V1().ReplicationControllers(),
		factory.Apps().V1().ReplicaSets(),
		factory.Apps().V1().Deployments(),
		factory.Apps().V1().StatefulSets(),
		client, restMapper, scaleClient, client.Discovery())
	factory.Start(ctx.Done())
	dc.Run(ctx, workers)
	factory.Shutdown()
	return nil
}
