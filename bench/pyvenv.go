package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// CacheDir is where the suites keep what they build once and reuse:
// $QUIVER_CACHE, else $HOME/.cache/quiver (the scripts' cache too).
func CacheDir() (string, error) {
	if d := os.Getenv("QUIVER_CACHE"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the cache directory: %w", err)
	}
	return filepath.Join(home, ".cache", "quiver"), nil
}

// PythonVenv returns the python of a virtual environment that holds
// exactly the packages reqs pins, installed from wheels only. The venv
// lives in the cache directory under name and reqs' hash, so a changed
// requirements file gets a venv of its own, and is built on first use
// with python (python3 when empty); pip's output goes to log. Each
// requirement is installed without its dependencies, and pip check then
// fails the build if reqs left one unpinned. Concurrent callers build it
// once: the others wait on a lock file.
func PythonVenv(ctx context.Context, python, name string, reqs []byte, log io.Writer) (string, error) {
	if python == "" {
		python = "python3"
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(reqs)
	dir := filepath.Join(cache, name+"-venv-"+hex.EncodeToString(sum[:8]))
	py := filepath.Join(dir, "bin", "python")
	stamp := filepath.Join(dir, "installed")
	if _, err := os.Stat(stamp); err == nil {
		return py, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("make the cache directory: %w", err)
	}
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("lock the venv: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock the venv: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(stamp); err == nil {
		return py, nil
	}
	// A venv without its stamp is a build that failed or was cut short.
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("remove a partial venv: %w", err)
	}
	if err := runLogged(ctx, log, python, "-m", "venv", dir); err != nil {
		return "", fmt.Errorf("make a venv with %s: %w", python, err)
	}
	reqFile := filepath.Join(dir, "requirements.txt")
	if err := os.WriteFile(reqFile, reqs, 0o644); err != nil {
		return "", fmt.Errorf("write the venv's requirements: %w", err)
	}
	if err := runLogged(ctx, log, py, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
		"--only-binary=:all:", "--no-deps", "-r", reqFile); err != nil {
		return "", fmt.Errorf("install the pinned wheels into %s (see pip's output above for the package that has no wheel here): %w", dir, err)
	}
	if err := runLogged(ctx, log, py, "-m", "pip", "check", "--disable-pip-version-check"); err != nil {
		return "", fmt.Errorf("check the venv's dependencies (the requirements leave one unpinned): %w", err)
	}
	if err := os.WriteFile(stamp, nil, 0o644); err != nil {
		return "", fmt.Errorf("stamp the venv: %w", err)
	}
	return py, nil
}

// runLogged runs a command with its output going to log; on failure the
// error carries the output's last lines too, since log may be discarded.
func runLogged(ctx context.Context, log io.Writer, name string, args ...string) error {
	var tail bytes.Buffer
	w := io.Writer(&tail)
	if log != nil {
		w = io.MultiWriter(log, &tail)
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	if err == nil {
		return nil
	}
	out := tail.Bytes()
	if len(out) > 2000 {
		out = out[len(out)-2000:]
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return err
	}
	return errors.Join(err, fmt.Errorf("%s", bytes.TrimSpace(out)))
}
