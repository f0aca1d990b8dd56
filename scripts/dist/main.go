// Command dist cross-compiles knowngood and loadgen for every release
// platform and archives each pair: a tar.gz per Linux and macOS platform, a
// zip per Windows one, and SHA256SUMS over the archives (sha256sum -c and
// shasum -a 256 -c read it). make dist runs it.
//
//	go run ./scripts/dist -out dist
//
// The binaries are static (CGO_ENABLED=0), built with -trimpath and
// -buildvcs=true, so that `go version -m` and -version show the module
// version, the commit and the Go version. Each archive holds one directory,
// knowngood-VERSION-GOOS-GOARCH/, with the two binaries and the README.
// VERSION is -version, or else `git describe --tags --always --dirty`.
package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Platforms is every GOOS/GOARCH a release is built for.
var Platforms = []string{
	"linux/amd64", "linux/arm64",
	"darwin/amd64", "darwin/arm64",
	"windows/amd64", "windows/arm64",
}

// Commands are the packages built, by binary name.
var Commands = []string{"./servers/knowngood", "./loadgen"}

func main() {
	out := flag.String("out", "dist", "directory the archives and SHA256SUMS are written to (emptied of old archives first)")
	version := flag.String("version", "", "version in the archive names (default: git describe --tags --always --dirty)")
	only := flag.String("platforms", strings.Join(Platforms, ","), "comma-separated GOOS/GOARCH to build")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "dist: unexpected argument", flag.Arg(0))
		os.Exit(2)
	}
	// Interrupted, it stops the go build under way and removes its
	// temporary directory before it exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *out, *version, strings.Split(*only, ","))
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out, version string, platforms []string) error {
	if _, err := os.Stat("go.mod"); err != nil {
		return errors.New("run it from the repository root (no go.mod here)")
	}
	if version == "" {
		version = describe()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(out, "knowngood-*"))
	for _, f := range old {
		if err := os.RemoveAll(f); err != nil {
			return err
		}
	}
	work, err := os.MkdirTemp("", "knowngood-dist")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	var archives []string
	for _, p := range platforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok {
			return fmt.Errorf("-platforms: %q is not GOOS/GOARCH", p)
		}
		name := fmt.Sprintf("knowngood-%s-%s-%s", version, goos, goarch)
		dir := filepath.Join(work, name)
		if err := build(ctx, dir, goos, goarch); err != nil {
			return err
		}
		if err := copyFile("README.md", filepath.Join(dir, "README.md")); err != nil {
			return err
		}
		archive := filepath.Join(out, name+".tar.gz")
		if goos == "windows" {
			archive = filepath.Join(out, name+".zip")
			err = writeArchive(archive, work, name, newZip)
		} else {
			err = writeArchive(archive, work, name, newTarGz)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", archive, err)
		}
		fmt.Fprintln(os.Stderr, "dist:", archive)
		archives = append(archives, archive)
	}
	return writeSums(filepath.Join(out, "SHA256SUMS"), archives)
}

// describe is the checkout's version for the archive names.
func describe() string {
	b, err := exec.Command("git", "describe", "--tags", "--always", "--dirty").Output()
	if v := strings.TrimSpace(string(b)); err == nil && v != "" {
		return v
	}
	return "dev"
}

func build(ctx context.Context, dir, goos, goarch string) error {
	args := append([]string{"build", "-trimpath", "-buildvcs=true", "-ldflags=-s -w", "-o", dir + string(filepath.Separator)}, Commands...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s/%s: %w", goos, goarch, err)
	}
	return nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// files is every regular file under root/name, by slash path from root,
// sorted, so that archives list their entries in one order.
func files(root, name string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(filepath.Join(root, name), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	sort.Strings(out)
	return out, err
}

// modTime is the one time every archive entry carries.
var modTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func mode(rel string) int64 {
	if strings.HasSuffix(rel, "README.md") {
		return 0o644
	}
	return 0o755
}

// archiveWriter writes one archive format into the file it was made on.
type archiveWriter interface {
	add(rel string, mode int64, b []byte) error
	Close() error // the archive's end; not the file's
}

// writeArchive writes every file under root/name, by its slash path from
// root, into a new file at archive, in the format newWriter makes.
func writeArchive(archive, root, name string, newWriter func(io.Writer) archiveWriter) error {
	names, err := files(root, name)
	if err != nil {
		return err
	}
	f, err := os.Create(archive)
	if err != nil {
		return err
	}
	w := newWriter(f)
	for _, rel := range names {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err == nil {
			err = w.add(rel, mode(rel), b)
		}
		if err != nil {
			f.Close()
			return err
		}
	}
	return errors.Join(w.Close(), f.Close())
}

// tarGz is a gzipped tar archive, for Linux and macOS.
type tarGz struct {
	gz *gzip.Writer
	tw *tar.Writer
}

func newTarGz(w io.Writer) archiveWriter {
	gz := gzip.NewWriter(w)
	return &tarGz{gz: gz, tw: tar.NewWriter(gz)}
}

func (t *tarGz) add(rel string, mode int64, b []byte) error {
	hdr := &tar.Header{Name: rel, Mode: mode, Size: int64(len(b)), ModTime: modTime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := t.tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := t.tw.Write(b)
	return err
}

func (t *tarGz) Close() error { return errors.Join(t.tw.Close(), t.gz.Close()) }

// zipArchive is a zip archive, for Windows.
type zipArchive struct{ zw *zip.Writer }

func newZip(w io.Writer) archiveWriter { return zipArchive{zip.NewWriter(w)} }

func (z zipArchive) add(rel string, mode int64, b []byte) error {
	hdr := &zip.FileHeader{Name: rel, Method: zip.Deflate, Modified: modTime}
	hdr.SetMode(os.FileMode(mode))
	w, err := z.zw.CreateHeader(hdr)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func (z zipArchive) Close() error { return z.zw.Close() }

// writeSums writes sha256sum's format: the hex digest, two spaces, the
// file's name relative to the directory SHA256SUMS is in.
func writeSums(path string, archives []string) error {
	var b strings.Builder
	for _, a := range archives {
		f, err := os.Open(a)
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), filepath.Base(a))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
