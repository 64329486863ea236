package deploy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestComposeEnsemble runs deploy/compose.yaml as an operator would: an image built FROM
// scratch from the static binary (deploy/Dockerfile), the three servers started with
// docker-compose under a project of their own (their own network and volumes, the published
// ports moved to free ones through CORRAL_CLIENT_PORTN / CORRAL_ADMIN_PORTN). Checked: every
// container's health check reports healthy; every server's /health answers ok; a znode
// created through server 1 is read through servers 2 and 3; a server restarted with
// docker-compose serves again with the data. Skipped where there is no Docker engine or
// docker-compose (docs/operations.md, "Dashboards, alerts and containers").
func TestComposeEnsemble(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an image and runs three containers")
	}
	for _, tool := range []string{"docker", "docker-compose"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here: %v", tool, err)
		}
	}
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Skipf("no Docker engine answers: %v: %s", err, strings.TrimSpace(string(out)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	project := fmt.Sprintf("corraltest%d", os.Getpid())
	image := project + ":test"

	// The image, as `make image` builds it: the static binary and an empty data/ directory.
	buildCtx := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-tags", "nobench", "-o", filepath.Join(buildCtx, "corral"), "../cmd/corral")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	run(t, build)
	if err := os.Mkdir(filepath.Join(buildCtx, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, exec.CommandContext(ctx, "docker", "build", "-q", "-t", image, "-f", "Dockerfile", buildCtx))
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", image).Run() })

	env := append(os.Environ(), "CORRAL_IMAGE="+image)
	var clients, admins []string
	for i := 1; i <= 3; i++ {
		c, a := freePort(t), freePort(t)
		env = append(env, fmt.Sprintf("CORRAL_CLIENT_PORT%d=%d", i, c), fmt.Sprintf("CORRAL_ADMIN_PORT%d=%d", i, a))
		clients = append(clients, fmt.Sprintf("127.0.0.1:%d", c))
		admins = append(admins, fmt.Sprintf("127.0.0.1:%d", a))
	}
	compose := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "docker-compose", append([]string{"-p", project, "-f", "compose.yaml"}, args...)...)
		cmd.Env = env
		return cmd
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := compose("logs", "--no-color", "--tail", "40").CombinedOutput()
			t.Logf("container logs:\n%s", out)
		}
		down := exec.Command("docker-compose", "-p", project, "-f", "compose.yaml", "down", "-v", "-t", "5")
		down.Env = env
		if out, err := down.CombinedOutput(); err != nil {
			t.Errorf("docker-compose down: %v\n%s", err, out)
		}
	})
	begin := time.Now()
	run(t, compose("up", "-d"))

	for i, a := range admins {
		waitHealth(ctx, t, i+1, "http://"+a+"/health")
	}
	t.Logf("every server's /health ok %v after up", time.Since(begin).Round(100*time.Millisecond))
	for i := 1; i <= 3; i++ {
		waitHealthy(ctx, t, fmt.Sprintf("%s_corral%d_1", project, i))
	}
	t.Logf("every container healthy %v after up", time.Since(begin).Round(100*time.Millisecond))

	c1 := connect(t, clients[0])
	if _, err := c1.Create("/compose", []byte("through corral1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create through server 1: %v", err)
	}
	c1.Close()
	readEverywhere := func() {
		for i, addr := range clients {
			c := connect(t, addr)
			if _, err := c.Sync("/compose"); err != nil {
				t.Fatalf("sync through server %d: %v", i+1, err)
			}
			data, _, err := c.Get("/compose")
			c.Close()
			if err != nil || string(data) != "through corral1" {
				t.Fatalf("read through server %d: %q, %v", i+1, data, err)
			}
		}
	}
	readEverywhere()

	run(t, compose("restart", "corral2"))
	waitHealth(ctx, t, 2, "http://"+admins[1]+"/health")
	readEverywhere()
}

func run(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitHealth waits until server n's /health answers ok.
func waitHealth(ctx context.Context, t *testing.T, n int, url string) {
	t.Helper()
	var last string
	for ctx.Err() == nil {
		resp, err := http.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = fmt.Sprintf("%s %q", resp.Status, strings.TrimSpace(string(body)))
			if resp.StatusCode == http.StatusOK {
				return
			}
		} else {
			last = err.Error()
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("server %d's /health never answered ok (last: %s)", n, last)
}

// waitHealthy waits until Docker reports the container's health check healthy.
func waitHealthy(ctx context.Context, t *testing.T, container string) {
	t.Helper()
	var last string
	for ctx.Err() == nil {
		out, err := exec.Command("docker", "inspect", "--format", "{{.State.Health.Status}}", container).CombinedOutput()
		last = strings.TrimSpace(string(out))
		if err == nil && last == "healthy" {
			return
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("container %s never became healthy (last: %s)", container, last)
}

func connect(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
