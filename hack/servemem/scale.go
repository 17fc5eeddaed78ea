package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/webhook"
)

// scaleRun is the scale benchmark (hack/bench-scale.sh, issue #45) on two clusters
// hack/perf/envup made: large (the nodes and drivers under test) and small (100 nodes, the
// baseline of the admission rate). It prints the four figures of the issue, each with its goal:
//
//  1. serve, with the args the chart's Deployment gives it (--audit and its defaults) and
//     --memory-limit as the chart's container limit gives it, on the large cluster: the time
//     from its start to its /readyz answering 200, and its peak RSS (VmHWM) once the audit's
//     first pass has written its reports and the paired rounds have run;
//  2. the admission rate on the large cluster relative to the small one: the same serve on each,
//     both up at once, a closed loop of 8 connections posting hack/perf's driver-create.json to
//     each in turn, the order alternating from round to round; the median ratio of the rounds
//     and their spread;
//  3. driverguard audit --kubeconfig on the large cluster, first, before any serve runs: wall
//     time and the child's peak RSS (its rusage's maxrss).
//
// Not as the chart runs it: the serving certificate is a self-signed file in --cert-dir (no
// --cert-rotation, no Service) and the webhooks are not registered (no --register-webhooks: the
// API server has nothing to call them at), so Ready means served, cluster view synced.
type scaleRun struct {
	bin, large, small, smallSize, body, memLimit string
	nodes, drivers, rounds                       int
	load                                         time.Duration
}

func (sc scaleRun) run() error {
	if sc.small == "" {
		return errors.New("-large-kubeconfig needs -small-kubeconfig (the baseline cluster of the paired rounds)")
	}
	body, err := os.ReadFile(sc.body)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	dir, err := os.MkdirTemp("", "bench-scale")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := selfSigned(dir); err != nil {
		return err
	}

	// The audit CLI first, as its own process, on the cluster at rest. On Linux a child's
	// maxrss starts from its parent's high-water mark (exec records the mm it leaves, and Go
	// starts children with CLONE_VM), so it is measured while this process is still small; its
	// own VmHWM at that point is printed as the floor of the figure.
	_, parentHWM, err := memory(os.Getpid())
	if err != nil {
		return err
	}
	audit := exec.CommandContext(ctx, sc.bin, "audit", "--kubeconfig", sc.large)
	audit.Stdout = io.Discard
	var auditErr bytes.Buffer
	audit.Stderr = &auditErr
	start := time.Now()
	err = audit.Run()
	wall := time.Since(start)
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 1) { // 1: findings, a result
		return fmt.Errorf("driverguard audit --kubeconfig: %w\n%s", err, auditErr.String())
	}
	ru, ok := audit.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return errors.New("no rusage for the audit process")
	}
	auditRSS := ru.Maxrss >> 10 // KiB on Linux

	// The small cluster's serve first, so that the large one's start is measured alone.
	small, err := sc.serve(ctx, dir, "small", sc.small)
	if err != nil {
		return err
	}
	defer small.stop()
	if _, err := small.ready(ctx); err != nil {
		return err
	}
	large, err := sc.serve(ctx, dir, "large", sc.large)
	if err != nil {
		return err
	}
	defer large.stop()
	ready, err := large.ready(ctx)
	if err != nil {
		return err
	}
	// The audit's first pass has written the cluster's report.
	c, err := reportClient(sc.large)
	if err != nil {
		return err
	}
	start = time.Now()
	if err := waitReport(ctx, c, "driverguard-cluster", 10*time.Minute, func(*openreports.ClusterReport) bool { return true }); err != nil {
		return fmt.Errorf("the audit's first pass: %w (serve's log: %s)", err, large.logFile)
	}
	audited := time.Since(start)

	// Paired rounds: a warm-up on each, then small/large and large/small in turn.
	var ratios, smallRPS, largeRPS []float64
	for _, s := range []*serveProc{small, large} {
		if _, err := sendLoad(ctx, s.url, body, 2*time.Second); err != nil {
			return fmt.Errorf("warming %s up: %w", s.name, err)
		}
	}
	for r := range sc.rounds {
		order := []*serveProc{small, large}
		if r%2 == 1 {
			order = []*serveProc{large, small}
		}
		got := map[string]float64{}
		for _, s := range order {
			rps, err := sendLoad(ctx, s.url, body, sc.load)
			if err != nil {
				return fmt.Errorf("round %d, %s cluster: %w (serve's log: %s)", r+1, s.name, err, s.logFile)
			}
			got[s.name] = rps
		}
		fmt.Fprintf(os.Stderr, "round %d: %s %.0f req/s, %d nodes %.0f req/s\n", r+1, sc.smallSize, got["small"], sc.nodes, got["large"])
		smallRPS, largeRPS = append(smallRPS, got["small"]), append(largeRPS, got["large"])
		ratios = append(ratios, got["large"]/got["small"])
	}
	_, hwm, err := memory(large.cmd.Process.Pid)
	if err != nil {
		return err
	}

	goal := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	mib := hwm >> 10
	flags := "serve --audit"
	if sc.memLimit != "" {
		flags += " --memory-limit " + sc.memLimit
	}
	fmt.Printf("cluster: %d nodes, %d RBLNDrivers; the audit's first pass wrote its reports %s after Ready\n", sc.nodes, sc.drivers, audited.Round(100*time.Millisecond))
	fmt.Printf("1. %s: Ready in %.1f s (goal <= 60 s: %s)\n", flags, ready.Seconds(), goal(ready <= time.Minute))
	fmt.Printf("1. %s: peak RSS (VmHWM) %d MiB (goal <= 256 MiB: %s)\n", flags, mib, goal(mib <= 256))
	med, lo, hi := medianSpread(ratios)
	ms, _, _ := medianSpread(smallRPS)
	ml, _, _ := medianSpread(largeRPS)
	fmt.Printf("2. admission rate at %d nodes / at %s: %.2f (%.2f-%.2f), median of %d paired rounds; %.0f / %.0f req/s (goal >= 0.95: %s)\n",
		sc.nodes, sc.smallSize, med, lo, hi, len(ratios), ml, ms, goal(med >= 0.95))
	fmt.Printf("3. driverguard audit --kubeconfig at %d nodes: %.1f s, peak RSS %d MiB (goal <= 20 s and <= 1024 MiB: %s; the figure's floor, this process's own peak at the audit's start, was %d MiB)\n",
		sc.nodes, wall.Seconds(), auditRSS, goal(wall <= 20*time.Second && auditRSS <= 1024), parentHWM>>10)
	return nil
}

func medianSpread(v []float64) (med, lo, hi float64) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	s := slices.Sorted(slices.Values(v))
	med = s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return med, s[0], s[len(s)-1]
}

// serveProc is one serve process of the benchmark.
type serveProc struct {
	name, url, readyz, logFile string
	cmd                        *exec.Cmd
	started                    time.Time
}

// serve starts serve on the cluster of kubeconfig with the chart's arguments (values.yaml's
// defaults, webhook-deployment.yaml's args) but for the certificate's and the registration's.
func (sc scaleRun) serve(ctx context.Context, dir, name, kubeconfig string) (*serveProc, error) {
	port, health, metrics := freePort(), freePort(), freePort()
	if port == 0 || health == 0 || metrics == 0 {
		return nil, errors.New("no free port")
	}
	args := []string{"serve", "--kubeconfig", kubeconfig, "--host", "127.0.0.1",
		"--port=" + strconv.Itoa(port), "--cert-dir=" + dir,
		fmt.Sprintf("--health-addr=127.0.0.1:%d", health), fmt.Sprintf("--metrics-addr=127.0.0.1:%d", metrics),
		"--tls-min-version=1.3", "--log-format=json", "--log-level=info", "--max-requests-in-flight=64",
		"--audit", "--audit-interval=10m", "--audit-max-results=100"}
	if sc.memLimit != "" {
		args = append(args, "--memory-limit="+sc.memLimit)
	}
	p := &serveProc{name: name, url: fmt.Sprintf("https://127.0.0.1:%d%s", port, webhook.PathValidateDriver),
		readyz: fmt.Sprintf("http://127.0.0.1:%d/readyz", health), logFile: filepath.Join(dir, name+"-serve.log")}
	log, err := os.Create(p.logFile)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.CommandContext(ctx, sc.bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	// The chart's downward-API env: the audit's Lease (leader election, on as in the chart)
	// and serve's Events are in the pod's namespace.
	p.cmd.Env = append(os.Environ(), "POD_NAMESPACE=default", "POD_NAME=driverguard-bench-"+name, "POD_UID=00000000-0000-4000-8000-0000000000"+map[string]string{"small": "01", "large": "02"}[name])
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	log.Close()
	return p, nil
}

// ready waits for /readyz and returns the time since the process started.
func (p *serveProc) ready(ctx context.Context) (time.Duration, error) {
	if err := waitReady(ctx, p.readyz); err != nil {
		b, _ := os.ReadFile(p.logFile)
		return 0, fmt.Errorf("serve on the %s cluster: %w\n%s", p.name, err, tail(b, 4000))
	}
	return time.Since(p.started), nil
}

func (p *serveProc) stop() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// reportClient reads ClusterReports from the cluster of kubeconfig.
func reportClient(kubeconfig string) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := openreports.Install(scheme); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}
