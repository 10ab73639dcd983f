// latencyfs is a passthrough FUSE file system for testing s3stream's wal-fsx: it mirrors a backing directory, adds a
// configurable latency to every operation (like FSx for ONTAP, EFS or NFS, where each synchronous write or metadata
// call is a network round trip), can refuse O_DIRECT, and fails or hangs writes and fsyncs on demand. Two mounts of
// one backing directory model two nodes sharing a file system: files are opened with FOPEN_DIRECT_IO and attributes
// and entries are never cached, so every read sees what the other mount wrote.
//
//	latencyfs -backing DIR -mount DIR [-latency 1ms] [-meta-latency 1ms] [-refuse-direct] [-cache] [-control 127.0.0.1:0]
//
// It prints "READY mount=<dir> control=<host:port>" once mounted, serves a control API on that address, and unmounts
// on SIGTERM or SIGINT. Control API (all GET):
//
//	/set?latency=2ms&metaLatency=1ms&refuseDirect=1      change the injected latency and the O_DIRECT policy
//	/set?writeErr=ENOSPC&fsyncErr=EIO&faultPath=seg-      fail writes/fsyncs (EIO, ENOSPC, EDQUOT; "none" clears)
//	                                                      of files whose path contains faultPath ("" = every file)
//	/set?hangWrite=1&hangFsync=1                          block writes/fsyncs until set back to 0
//	/stats                                                operation counts as JSON
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// faults is the mutable behaviour, changed through the control API (guarded by cfgMu).
type faults struct {
	latency      time.Duration
	metaLatency  time.Duration
	refuseDirect bool
	writeErr     syscall.Errno
	fsyncErr     syscall.Errno
	faultPath    string
	hangWrite    bool
	hangFsync    bool
}

type counters struct {
	Reads, Writes, Fsyncs, Opens, Meta, WriteFaults, FsyncFaults, DirectRefused atomic.Int64
}

var (
	cfgMu sync.Mutex
	cfg   faults
	stats counters
)

func current() faults {
	cfgMu.Lock()
	defer cfgMu.Unlock()
	return cfg
}

func sleep(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}

// waitWhile blocks while the hang flag chosen by pick is set.
func waitWhile(pick func(faults) bool) {
	for pick(current()) {
		time.Sleep(5 * time.Millisecond)
	}
}

// node is a loopback node with latency on metadata operations and an O_DIRECT policy on open.
type node struct {
	fs.LoopbackNode
}

func newNode(root *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
	return &node{LoopbackNode: fs.LoopbackNode{RootData: root}}
}

func (n *node) relPath() string {
	return n.Path(n.Root())
}

func meta() {
	stats.Meta.Add(1)
	sleep(current().metaLatency)
}

// openFlags refuses O_DIRECT when configured and strips it otherwise: the backing directory may be on tmpfs, and
// durability towards the backing disk is kept by passing O_DSYNC through and by forwarding fsync.
func openFlags(flags uint32) (uint32, syscall.Errno) {
	if flags&syscall.O_DIRECT != 0 {
		if current().refuseDirect {
			stats.DirectRefused.Add(1)
			return 0, syscall.EINVAL
		}
		flags &^= syscall.O_DIRECT
	}
	return flags, 0
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	stats.Opens.Add(1)
	meta()
	flags, errno := openFlags(flags)
	if errno != 0 {
		return nil, 0, errno
	}
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &file{inner: fh, path: n.relPath()}, fuseFlags | openFuseFlags(), 0
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	stats.Opens.Add(1)
	meta()
	flags, errno := openFlags(flags)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	inode, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return inode, &file{inner: fh, path: n.relPath() + "/" + name}, fuseFlags | openFuseFlags(), 0
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	meta()
	return n.LoopbackNode.Lookup(ctx, name, out)
}

func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	meta()
	if inner, ok := f.(*file); ok {
		f = inner.inner
	}
	return n.LoopbackNode.Getattr(ctx, f, out)
}

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	meta()
	if inner, ok := f.(*file); ok {
		f = inner.inner
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	meta()
	return n.LoopbackNode.Mkdir(ctx, name, mode, out)
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	meta()
	return n.LoopbackNode.Unlink(ctx, name)
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	meta()
	return n.LoopbackNode.Rmdir(ctx, name)
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	meta()
	if p, ok := newParent.(*node); ok {
		newParent = &p.LoopbackNode
	}
	return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	meta()
	return n.LoopbackNode.OpendirHandle(ctx, flags)
}

var pageCache bool

// openFuseFlags: without -cache every read and write goes to this process (FOPEN_DIRECT_IO), as on a file system
// whose clients must see each other's writes at once. Direct writes to one file may run in parallel
// (FOPEN_PARALLEL_DIRECT_WRITES, Linux 6.2+), as they do on NFS; without it the kernel serializes them per inode.
func openFuseFlags() uint32 {
	if pageCache {
		return fuse.FOPEN_PARALLEL_DIRECT_WRITES
	}
	return fuse.FOPEN_DIRECT_IO | fuse.FOPEN_PARALLEL_DIRECT_WRITES
}

// file wraps a loopback file handle with data latency and faults.
type file struct {
	inner fs.FileHandle
	path  string
}

func (f *file) faulty(s faults) bool {
	return s.faultPath == "" || strings.Contains(f.path, s.faultPath)
}

func (f *file) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	stats.Reads.Add(1)
	sleep(current().latency)
	return f.inner.(fs.FileReader).Read(ctx, dest, off)
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	stats.Writes.Add(1)
	s := current()
	sleep(s.latency)
	if f.faulty(s) {
		if s.hangWrite {
			waitWhile(func(c faults) bool { return c.hangWrite })
		}
		if s.writeErr != 0 {
			stats.WriteFaults.Add(1)
			return 0, s.writeErr
		}
	}
	return f.inner.(fs.FileWriter).Write(ctx, data, off)
}

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	stats.Fsyncs.Add(1)
	s := current()
	sleep(s.latency)
	if f.faulty(s) {
		if s.hangFsync {
			waitWhile(func(c faults) bool { return c.hangFsync })
		}
		if s.fsyncErr != 0 {
			stats.FsyncFaults.Add(1)
			return s.fsyncErr
		}
	}
	return f.inner.(fs.FileFsyncer).Fsync(ctx, flags)
}

func (f *file) Flush(ctx context.Context) syscall.Errno {
	return f.inner.(fs.FileFlusher).Flush(ctx)
}

func (f *file) Release(ctx context.Context) syscall.Errno {
	return f.inner.(fs.FileReleaser).Release(ctx)
}

func (f *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return f.inner.(fs.FileGetattrer).Getattr(ctx, out)
}

func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return f.inner.(fs.FileSetattrer).Setattr(ctx, in, out)
}

func (f *file) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	return f.inner.(fs.FileAllocater).Allocate(ctx, off, size, mode)
}

func (f *file) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return f.inner.(fs.FileLseeker).Lseek(ctx, off, whence)
}

func parseErrno(v string) (syscall.Errno, error) {
	switch strings.ToUpper(v) {
	case "", "NONE", "0":
		return 0, nil
	case "EIO":
		return syscall.EIO, nil
	case "ENOSPC":
		return syscall.ENOSPC, nil
	case "EDQUOT":
		return syscall.EDQUOT, nil
	case "EROFS":
		return syscall.EROFS, nil
	}
	return 0, fmt.Errorf("unknown errno %q (EIO, ENOSPC, EDQUOT, EROFS, none)", v)
}

func handleSet(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cfgMu.Lock()
	defer cfgMu.Unlock()
	var err error
	for key, values := range q {
		v := values[0]
		switch key {
		case "latency":
			cfg.latency, err = time.ParseDuration(v)
		case "metaLatency":
			cfg.metaLatency, err = time.ParseDuration(v)
		case "refuseDirect":
			cfg.refuseDirect = v == "1" || v == "true"
		case "writeErr":
			cfg.writeErr, err = parseErrno(v)
		case "fsyncErr":
			cfg.fsyncErr, err = parseErrno(v)
		case "faultPath":
			cfg.faultPath = v
		case "hangWrite":
			cfg.hangWrite = v == "1" || v == "true"
		case "hangFsync":
			cfg.hangFsync = v == "1" || v == "true"
		default:
			err = fmt.Errorf("unknown setting %q", key)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	fmt.Fprintln(w, "ok")
}

func handleStats(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]int64{
		"reads": stats.Reads.Load(), "writes": stats.Writes.Load(), "fsyncs": stats.Fsyncs.Load(),
		"opens": stats.Opens.Load(), "meta": stats.Meta.Load(), "writeFaults": stats.WriteFaults.Load(),
		"fsyncFaults": stats.FsyncFaults.Load(), "directRefused": stats.DirectRefused.Load(),
	})
}

func main() {
	backing := flag.String("backing", "", "backing directory (required)")
	mountPoint := flag.String("mount", "", "mount point (required; created if missing)")
	latency := flag.Duration("latency", 0, "latency added to every read, write and fsync")
	metaLatency := flag.Duration("meta-latency", 0, "latency added to every metadata operation (lookup, open, ...)")
	refuseDirect := flag.Bool("refuse-direct", false, "refuse open(O_DIRECT) with EINVAL")
	cache := flag.Bool("cache", false, "let the kernel cache file data (a single-client mount)")
	control := flag.String("control", "127.0.0.1:0", "address of the control API")
	flag.Parse()
	if *backing == "" || *mountPoint == "" {
		flag.Usage()
		os.Exit(2)
	}
	cfg.latency, cfg.metaLatency, cfg.refuseDirect, pageCache = *latency, *metaLatency, *refuseDirect, *cache
	if err := os.MkdirAll(*mountPoint, 0o755); err != nil {
		log.Fatalf("latencyfs: %v", err)
	}
	root := &fs.LoopbackRoot{Path: *backing, NewNode: newNode}
	var st syscall.Stat_t
	if err := syscall.Stat(*backing, &st); err != nil {
		log.Fatalf("latencyfs: backing directory: %v", err)
	}
	root.Dev = uint64(st.Dev)
	root.RootNode = newNode(root, nil, "", &st)
	zero := time.Duration(0)
	server, err := fs.Mount(*mountPoint, root.RootNode, &fs.Options{
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{
			FsName:      "latencyfs",
			Name:        "latencyfs",
			DirectMount: true,
			AllowOther:  os.Geteuid() == 0,
			MaxWrite:    1 << 20,
		},
	})
	if err != nil {
		log.Fatalf("latencyfs: mount %s: %v", *mountPoint, err)
	}
	listener, err := net.Listen("tcp", *control)
	if err != nil {
		_ = server.Unmount()
		log.Fatalf("latencyfs: control: %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/set", handleSet)
	mux.HandleFunc("/stats", handleStats)
	go func() { _ = http.Serve(listener, mux) }()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		// Release hung operations so that the unmount can finish.
		cfgMu.Lock()
		cfg.hangWrite, cfg.hangFsync = false, false
		cfgMu.Unlock()
		for i := 0; i < 50; i++ {
			if server.Unmount() == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	fmt.Printf("READY mount=%s control=%s\n", *mountPoint, listener.Addr())
	server.Wait()
}
