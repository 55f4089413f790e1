package protoarrow

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// maxCompileErrors caps how many source errors one Compile reports.
const maxCompileErrors = 20

// Compile parses and links protoFile and its imports at run time and returns
// the descriptor of messageName.
//
// With no importPaths, the directory of protoFile is the only import path.
// Otherwise protoFile is looked up relative to each import path in turn, and
// a protoFile path that lies inside an import path is accepted as well. The
// google/protobuf/*.proto well-known files are always available.
//
// messageName may be fully qualified ("pkg.Outer.Inner"), relative to the
// file's package ("Outer.Inner"), or a short name that is unique in the file.
//
// Errors: a missing file matches fs.ErrNotExist; source errors carry
// file:line:col and can be inspected with errors.As against
// reporter.ErrorWithPos; an unknown message matches ErrUnknownMessage and
// lists the messages the file defines.
func Compile(ctx context.Context, protoFile string, importPaths []string, messageName string) (protoreflect.MessageDescriptor, error) {
	name, paths, err := locate(protoFile, importPaths)
	if err != nil {
		return nil, err
	}

	var (
		mu   sync.Mutex
		errs []error
	)
	collect := func(e reporter.ErrorWithPos) error {
		mu.Lock()
		defer mu.Unlock()
		if len(errs) < maxCompileErrors {
			errs = append(errs, e)
		}
		return nil
	}
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: paths}),
		Reporter: reporter.NewReporter(collect, nil),
	}
	files, err := c.Compile(ctx, name)
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		return nil, fmt.Errorf("compile %s: %w", protoFile, errors.Join(errs...))
	}
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", protoFile, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("compile %s: no file produced", protoFile)
	}
	return findMessage(files[0], protoFile, messageName)
}

// locate returns the name to compile protoFile by and the import paths to
// search, and checks that the file exists.
func locate(protoFile string, importPaths []string) (string, []string, error) {
	if protoFile == "" {
		return "", nil, errors.New("compile: empty proto file name")
	}
	if len(importPaths) == 0 {
		if _, err := os.Stat(protoFile); err != nil {
			return "", nil, fmt.Errorf("open proto file %s: %w", protoFile, err)
		}
		return filepath.Base(protoFile), []string{filepath.Dir(protoFile)}, nil
	}
	for _, ip := range importPaths {
		if _, err := os.Stat(filepath.Join(ip, protoFile)); err == nil {
			return filepath.ToSlash(protoFile), importPaths, nil
		}
	}
	if _, err := os.Stat(protoFile); err == nil {
		abs, _ := filepath.Abs(protoFile)
		for _, ip := range importPaths {
			ipAbs, _ := filepath.Abs(ip)
			rel, err := filepath.Rel(ipAbs, abs)
			if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return filepath.ToSlash(rel), importPaths, nil
			}
		}
		return "", nil, fmt.Errorf("open proto file %s: not inside import paths %q", protoFile, importPaths)
	}
	return "", nil, fmt.Errorf("open proto file %s: not found in import paths %q: %w", protoFile, importPaths, fs.ErrNotExist)
}

// findMessage looks messageName up in fd, or lists what fd defines.
func findMessage(fd protoreflect.FileDescriptor, protoFile, messageName string) (protoreflect.MessageDescriptor, error) {
	want := strings.TrimPrefix(messageName, ".")
	pkg := string(fd.Package())
	var all []protoreflect.MessageDescriptor
	var walk func(protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			m := ms.Get(i)
			if m.IsMapEntry() {
				continue
			}
			all = append(all, m)
			walk(m.Messages())
		}
	}
	walk(fd.Messages())

	var short []protoreflect.MessageDescriptor
	for _, m := range all {
		full := string(m.FullName())
		if full == want || (pkg != "" && full == pkg+"."+want) {
			return m, nil
		}
		if string(m.Name()) == want {
			short = append(short, m)
		}
	}
	if len(short) == 1 {
		return short[0], nil
	}

	names := make([]string, len(all))
	for i, m := range all {
		names[i] = string(m.FullName())
	}
	sort.Strings(names)
	if len(short) > 1 {
		cands := make([]string, len(short))
		for i, m := range short {
			cands[i] = string(m.FullName())
		}
		return nil, fmt.Errorf("compile %s: %w %q: ambiguous short name; use one of %s",
			protoFile, ErrUnknownMessage, messageName, strings.Join(cands, ", "))
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("compile %s: %w %q: the file defines no messages", protoFile, ErrUnknownMessage, messageName)
	}
	return nil, fmt.Errorf("compile %s: %w %q: the file defines %s", protoFile, ErrUnknownMessage, messageName, strings.Join(names, ", "))
}
