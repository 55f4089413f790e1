package testsvc

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The fixed S3 identity every SeaweedFS started here trusts. Setting it turns
// on S3 authentication, so requests must be signed with it.
const (
	seaweedAccessKey = "quiver"
	seaweedSecretKey = "quiver-secret"
	seaweedRegion    = "us-east-1"
)

// seaweedReadyBanner is printed by `weed mini` once every service runs and
// the buckets named on its command line exist.
const seaweedReadyBanner = "All enabled components are running"

// SeaweedConfig lists what StartSeaweed creates before it returns.
type SeaweedConfig struct {
	// Buckets are plain S3 buckets.
	Buckets []string
	// TableBuckets are S3 Tables buckets; the Iceberg REST catalog serves
	// each as a warehouse, addressed by its name as the catalog prefix
	// (CatalogURL + "/v1/" + name + "/namespaces").
	TableBuckets []string
	// VolumeSizeMB is the size at which a volume stops taking writes
	// (defaultVolumeSizeMB when 0), and MaxVolumes how many volumes the
	// store may hold (defaultMaxVolumes when 0). Both are fixed rather
	// than left to weed, which sizes volumes from the disk's capacity (1
	// GiB on a large disk) and counts the volumes it may create from the
	// disk's free space, reserving a full volume for each one it grows,
	// seven at a time: on a machine whose shared disk was short of free
	// space that refused writes a few hundred MB into a test's uploads.
	// Volumes are sparse files, so the fixed count costs only what is
	// written.
	VolumeSizeMB int
	MaxVolumes   int
}

// The volume layout StartSeaweed gives weed unless a test asks otherwise:
// up to 16 GiB in all, grown 256 MiB at a time.
const (
	defaultVolumeSizeMB = 256
	defaultMaxVolumes   = 64
)

// Seaweed is a SeaweedFS object store (`weed mini`) running as a child
// process on 127.0.0.1. It speaks S3 with signed requests only and serves
// an Iceberg REST catalog.
type Seaweed struct {
	S3URL      string // S3 endpoint, like http://127.0.0.1:PORT
	CatalogURL string // Iceberg REST catalog; its API lives under /v1
	Region     string
	AccessKey  string
	SecretKey  string
	Dir        string // data and logs

	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	bin     string
	args    []string
	logPath string
}

// StartSeaweed starts SeaweedFS on free loopback ports with its data in a
// temporary directory, waits until it serves requests, and stops it when the
// test ends. The binary is built on first use (several minutes) and cached;
// with QUIVER_SKIP_S3=1 a missing binary skips the test instead.
func StartSeaweed(t testing.TB, cfg SeaweedConfig) *Seaweed {
	t.Helper()
	bin := SeaweedBinary(t)
	// A port picked free can be taken before weed binds it; weed then exits
	// at once, so try again with other ports.
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var s *Seaweed
		if s, err = startSeaweed(t, bin, cfg); err == nil {
			return s
		}
		t.Logf("seaweedfs: %v", err)
	}
	t.Fatalf("start seaweedfs: %v", err)
	return nil
}

func startSeaweed(t testing.TB, bin string, cfg SeaweedConfig) (*Seaweed, error) {
	start := time.Now()
	dir := t.TempDir()
	data, logs := filepath.Join(dir, "data"), filepath.Join(dir, "logs")
	for _, d := range []string{data, logs} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
	}
	ports, err := FreePorts(11)
	if err != nil {
		return nil, err
	}
	s3Port, catalogPort := ports[0], ports[1]
	args := []string{
		"-logdir=" + logs, "mini", "-dir=" + data,
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		// Never report to the SeaweedFS telemetry server.
		"-master.telemetry=false",
		// Every port is explicit: weed then fails rather than moving to
		// another one, and the gRPC ports (HTTP port + 10000 unless given)
		// cannot clash with another instance.
		"-s3.port=" + strconv.Itoa(s3Port),
		"-s3.port.iceberg=" + strconv.Itoa(catalogPort),
		"-master.port=" + strconv.Itoa(ports[2]),
		"-master.port.grpc=" + strconv.Itoa(ports[3]),
		"-volume.port=" + strconv.Itoa(ports[4]),
		"-volume.port.grpc=" + strconv.Itoa(ports[5]),
		"-filer.port=" + strconv.Itoa(ports[6]),
		"-filer.port.grpc=" + strconv.Itoa(ports[7]),
		"-s3.port.grpc=" + strconv.Itoa(ports[8]),
		"-admin.port=" + strconv.Itoa(ports[9]),
		"-admin.port.grpc=" + strconv.Itoa(ports[10]),
		// Not needed: the Lance server, WebDAV, the admin's legacy port.
		"-s3.port.lance=0", "-webdav=false", "-admin.port.legacy=0",
		"-master.volumeSizeLimitMB=" + strconv.Itoa(cmp.Or(cfg.VolumeSizeMB, defaultVolumeSizeMB)),
		"-volume.max=" + strconv.Itoa(cmp.Or(cfg.MaxVolumes, defaultMaxVolumes)),
	}
	if len(cfg.Buckets) > 0 {
		args = append(args, "-bucket="+strings.Join(cfg.Buckets, ","))
	}
	if len(cfg.TableBuckets) > 0 {
		args = append(args, "-tableBucket="+strings.Join(cfg.TableBuckets, ","))
	}
	logPath := filepath.Join(dir, "log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()

	s := &Seaweed{
		S3URL:      "http://127.0.0.1:" + strconv.Itoa(s3Port),
		CatalogURL: "http://127.0.0.1:" + strconv.Itoa(catalogPort),
		Region:     seaweedRegion,
		AccessKey:  seaweedAccessKey,
		SecretKey:  seaweedSecretKey,
		Dir:        dir,
		bin:        bin,
		args:       args,
		logPath:    logPath,
	}
	if err := s.run(logFile); err != nil {
		return nil, err
	}
	if err := s.waitReady(logPath, 90*time.Second); err != nil {
		s.stop()
		return nil, fmt.Errorf("%v; last lines of its log:\n%s", err, seaweedLogTail(logPath, 20))
	}
	t.Logf("seaweedfs: S3 on %s, Iceberg catalog on %s, ready in %v",
		s.S3URL, s.CatalogURL, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("seaweedfs log:\n%s", seaweedLogTail(s.logPath, 40))
		}
	})
	return s, nil
}

// run starts weed with s's arguments, its output going to log.
func (s *Seaweed) run(log *os.File) error {
	cmd := exec.Command(s.bin, s.args...)
	// Run inside the temporary directory so weed finds no stray config
	// files (it reads e.g. ./security.toml), and give it only the
	// credentials from here.
	cmd.Dir = s.Dir
	cmd.Env = append(seaweedEnv(),
		"AWS_ACCESS_KEY_ID="+seaweedAccessKey,
		"AWS_SECRET_ACCESS_KEY="+seaweedSecretKey)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(s.done) }()
	return nil
}

// Restart starts the store again after Stop, on the same ports and with
// the same data, for tests of an object store that goes away and comes
// back; it returns once the store serves requests.
func (s *Seaweed) Restart(t testing.TB) {
	t.Helper()
	s.stop()
	// A fresh log, so that the banner waited for is the new process's.
	s.logPath = filepath.Join(s.Dir, fmt.Sprintf("log.%d", time.Now().UnixNano()))
	logFile, err := os.Create(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	if err := s.run(logFile); err != nil {
		t.Fatalf("restart seaweedfs: %v", err)
	}
	if err := s.waitReady(s.logPath, 90*time.Second); err != nil {
		t.Fatalf("restart seaweedfs: %v; last lines of its log:\n%s", err, seaweedLogTail(s.logPath, 20))
	}
}

// waitReady waits until S3 answers at all (a request without a signature
// gets 403) and weed has printed its banner, which it does only after the
// buckets named on its command line exist.
func (s *Seaweed) waitReady(logPath string, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("weed exited early: %v", s.cmd.ProcessState)
		default:
		}
		if resp, err := client.Get(s.S3URL + "/"); err == nil {
			resp.Body.Close()
			if log, _ := os.ReadFile(logPath); bytes.Contains(log, []byte(seaweedReadyBanner)) {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %v", timeout)
}

// Stop stops the store before the test ends, for tests of what happens
// when it goes away; stopping it again does nothing.
func (s *Seaweed) Stop() { s.stop() }

// stop asks weed to shut down and kills it if it takes too long.
func (s *Seaweed) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// CreateBucket creates an S3 bucket with a signed PUT.
func (s *Seaweed) CreateBucket(t testing.TB, name string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, s.S3URL+"/"+name, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Sign(req, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("create bucket %s: %s: %s", name, resp.Status, body)
	}
}

// Sign signs req for S3 with AWS Signature Version 4 (aws-sdk-go-v2's
// signer), using s's key pair. body must be the request's body (nil for
// none); Sign sets req.Body from it.
func (s *Seaweed) Sign(req *http.Request, body []byte) {
	sum := sha256.Sum256(body)
	payloadHash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	if body != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
	}
	creds := aws.Credentials{AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, payloadHash, "s3", s.Region, time.Now()); err != nil {
		panic(fmt.Sprintf("sign S3 request: %v", err)) // only for a malformed request, a bug in the test
	}
}

var seaweedBuild struct {
	sync.Mutex
	bin string
}

// SeaweedBinary returns the path of the cached weed binary, building it with
// scripts/seaweedfs.sh if needed (several minutes the first time). With
// QUIVER_SKIP_S3=1 it skips the test instead of building.
func SeaweedBinary(t testing.TB) string {
	t.Helper()
	seaweedBuild.Lock()
	defer seaweedBuild.Unlock()
	if seaweedBuild.bin != "" {
		return seaweedBuild.bin
	}
	script := filepath.Join(RepoRoot(t), "scripts", "seaweedfs.sh")
	if out, err := exec.Command("bash", script, "path").Output(); err == nil {
		seaweedBuild.bin = strings.TrimSpace(string(out))
		return seaweedBuild.bin
	}
	if os.Getenv("QUIVER_SKIP_S3") == "1" {
		t.Skip("QUIVER_SKIP_S3=1 and SeaweedFS is not built; run scripts/seaweedfs.sh build")
	}
	t.Logf("building SeaweedFS with %s build; this takes several minutes", script)
	start := time.Now()
	var stderr bytes.Buffer
	cmd := exec.Command("bash", script, "build")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("build seaweedfs: %v\n%s", err, stderr.Bytes())
	}
	seaweedBuild.bin = strings.TrimSpace(string(out))
	t.Logf("built %s in %v", seaweedBuild.bin, time.Since(start).Round(time.Second))
	return seaweedBuild.bin
}

// RepoRoot returns the directory holding the module's go.mod, found by
// walking up from the working directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// seaweedEnv is the test's environment without the variables weed would
// take configuration from (credentials, buckets, WEED_* settings).
func seaweedEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "AWS_") || strings.HasPrefix(name, "WEED_") ||
			name == "S3_BUCKET" || name == "S3_TABLE_BUCKET" || name == "S3_EXTERNAL_URL" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// FreePorts returns n distinct ports that are free on 127.0.0.1 right now.
// They come from below 32768, outside Linux's ephemeral range, so weed's
// own outgoing connections (or any process's) cannot take one before it
// is bound: servers that must know each other's ports start on them.
func FreePorts(n int) ([]int, error) {
	seen := map[int]bool{}
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			return nil, errors.New("no free ports on 127.0.0.1")
		}
		p := 20000 + rand.IntN(12000)
		if seen[p] {
			continue
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		l.Close()
		ports = append(ports, p)
	}
	return ports, nil
}

// seaweedLogTail returns the last n lines of the file at path.
func seaweedLogTail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ClearAWSEnv empties the AWS variables the S3 clients fall back to, so
// that only what a test configures reaches the object store.
func ClearAWSEnv(t testing.TB) {
	t.Helper()
	for _, k := range []string{
		"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	} {
		t.Setenv(k, "")
	}
}
