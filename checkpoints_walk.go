package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Snapshots: one walk of a covered directory, which stores what changed
// and returns the hash of the directory's tree. An unchanged file costs
// one lstat: the index remembers, per path, the file's size, times, inode
// and mode when it was last hashed, and the hash. As in git's index, an
// entry is trusted only when the file's ctime lies well before the moment
// it was hashed (racyWindow): a file changed within the clock's
// granularity of being hashed could otherwise keep every stat field and
// change its bytes. Such files are simply hashed again.

// racyWindow is how long after a file's last change its index entry is
// not trusted: above the timestamp granularity of every file system zot
// runs on (FAT's is two seconds).
const racyWindow = 2 * time.Second

// ckFileStat is what the index compares to tell a file unchanged.
type ckFileStat struct {
	Size, Mtime, Ctime int64
	Ino                uint64
	Mode               uint32
}

// ckIndexEntry is what the index knows of one file.
type ckIndexEntry struct {
	stat ckFileStat
	seen int64 // when it was hashed, in Unix nanoseconds
	hash string
}

const indexHeader = "zot-checkpoint-index 1\n"

// errTooManyFiles stops a walk past MaxFiles.
var errTooManyFiles = errors.New("too many files")

// loadIndex reads the index once per prune generation. A damaged index is
// only a cache lost: it is dropped and the files hashed again.
func (c *Checkpoints) loadIndex() error {
	if c.index != nil {
		return nil
	}
	c.indexGen = readGen(c.dir)
	c.index = map[string]ckIndexEntry{}
	b, err := os.ReadFile(filepath.Join(c.dir, "index"))
	if err != nil {
		return nil
	}
	rest, ok := bytes.CutPrefix(b, []byte(indexHeader))
	if !ok {
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(rest))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		e, path, ok := parseIndexLine(sc.Text())
		if !ok {
			c.index = map[string]ckIndexEntry{}
			c.indexDirt = true
			return nil
		}
		c.index[path] = e
	}
	return nil
}

// parseIndexLine reads "ino size mtime ctime mode seen hash path".
func parseIndexLine(line string) (e ckIndexEntry, path string, ok bool) {
	f := strings.SplitN(line, " ", 8)
	if len(f) != 8 || !isObjectHash(f[6]) {
		return e, "", false
	}
	var nums [6]int64
	for i := 0; i < 6; i++ {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return e, "", false
		}
		nums[i] = n
	}
	path, err := strconv.Unquote(f[7])
	if err != nil || !filepath.IsAbs(path) {
		return e, "", false
	}
	e.stat = ckFileStat{Ino: uint64(nums[0]), Size: nums[1], Mtime: nums[2], Ctime: nums[3], Mode: uint32(nums[4])}
	e.seen, e.hash = nums[5], f[6]
	return e, path, true
}

// saveIndex writes the index when it changed. It is a cache: a crash that
// tears it costs a rehash, so it is renamed into place but not synced.
func (c *Checkpoints) saveIndex() error {
	if !c.indexDirt {
		return nil
	}
	var b bytes.Buffer
	b.WriteString(indexHeader)
	for _, path := range sortedKeys(c.index) {
		e := c.index[path]
		s := e.stat
		fmt.Fprintf(&b, "%d %d %d %d %d %d %s %s\n", int64(s.Ino), s.Size, s.Mtime, s.Ctime, s.Mode, e.seen, e.hash, strconv.Quote(path))
	}
	path := filepath.Join(c.dir, "index")
	if err := storeWrite(path, b.Bytes(), false); err != nil {
		return fmt.Errorf("checkpoint: write %s: %w", path, err)
	}
	c.indexDirt = false
	return nil
}

// ckWalk is one snapshot of one root.
type ckWalk struct {
	c     *Checkpoints
	root  string
	home  string // $ZOT_HOME, never recorded
	start int64  // when the walk began: the "seen" of what it hashes
	files int
	seen  map[string]bool // index paths the walk met
	// countOnly walks without a stat or a read, to find a root too big
	// before its first snapshot reads everything in it.
	countOnly bool
}

// snapshotRoot stores what changed beneath root and returns its tree. A
// root that cannot be covered gets no tree and a note saying why.
func (c *Checkpoints) snapshotRoot(root string) (tree, note string, err error) {
	st, err := os.Stat(root)
	if err != nil || !st.IsDir() {
		return "", fmt.Sprintf("%s is not covered: not a directory zot can read", root), nil
	}
	if why, ok := c.uncovered[root]; ok {
		return "", why, nil
	}
	home, _ := filepath.Abs(c.home)
	ign := c.rootIgnores(root)
	w := &ckWalk{c: c, root: root, home: home, start: c.now().UnixNano(), seen: map[string]bool{}, countOnly: !c.counted[root]}
	if w.countOnly {
		_, _, err = w.dir(root, "", ign, true)
		w.countOnly, w.files = false, 0
		if err == nil {
			c.counted[root] = true
		}
	}
	var hash string
	if err == nil {
		hash, _, err = w.dir(root, "", ign, true)
	}
	if errors.Is(err, errTooManyFiles) {
		why := fmt.Sprintf("%s is not covered: it has more than %d files (raise \"max_files\" under \"checkpoints\" in config.json, or ignore some in .gitignore)", root, c.set.MaxFiles)
		c.uncovered[root] = why
		return "", why, nil
	}
	if err != nil {
		return "", "", err
	}
	prefix := root + string(filepath.Separator)
	for path := range c.index {
		if strings.HasPrefix(path, prefix) && !w.seen[path] {
			delete(c.index, path)
			c.indexDirt = true
		}
	}
	return hash, "", nil
}

// dir records one directory; excluded is set when it turns out to be a
// cache (CACHEDIR.TAG), which is then not recorded at all.
func (w *ckWalk) dir(abs, rel string, ign *ignoreStack, isRoot bool) (hash string, excluded bool, err error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
	if err != nil {
		return "", true, nil // unreadable or gone: there, not recorded
	}
	list, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return "", true, nil
	}
	slices.SortFunc(list, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, d := range list {
		switch d.Name() {
		case ".gitignore":
			if d.Type().IsRegular() {
				ign = ign.push(w.c.ignoreFile(filepath.Join(abs, ".gitignore"), rel, ""))
			}
		case cacheDirTag:
			if !isRoot && isCacheDirTag(filepath.Join(abs, cacheDirTag)) {
				return "", true, nil
			}
		}
	}
	entries := make([]ckEntry, 0, len(list))
	for _, d := range list {
		name := d.Name()
		childAbs := abs + string(filepath.Separator) + name
		childRel := name
		if rel != "" {
			childRel = rel + "/" + name
		}
		typ := d.Type()
		if _, ok := tempPID(name); ok {
			// zot's own temp file: never state. A dead zot's goes; a live
			// one's is there, not recorded.
			if !removeStaleTemp(abs, name) {
				entries = append(entries, ckEntry{Name: name, Kind: kindExcluded})
			}
			continue
		}
		if name == ".git" || childAbs == w.home || ign.ignored(childRel, name, typ.IsDir()) {
			entries = append(entries, ckEntry{Name: name, Kind: kindExcluded})
			continue
		}
		e, keep, err := w.entry(childAbs, childRel, typ, ign)
		if err != nil {
			return "", false, err
		}
		if keep {
			entries = append(entries, e)
		}
	}
	if w.countOnly {
		return "", false, nil
	}
	hash, err = w.c.putObject(encodeTree(entries))
	return hash, false, err
}

// entry records one directory entry; keep is false for one that vanished.
func (w *ckWalk) entry(abs, rel string, typ fs.FileMode, ign *ignoreStack) (e ckEntry, keep bool, err error) {
	e.Name = filepath.Base(abs)
	if typ.IsRegular() || typ&fs.ModeSymlink != 0 {
		if w.files++; w.files > w.c.set.MaxFiles {
			return e, false, errTooManyFiles
		}
		if w.countOnly {
			return e, false, nil
		}
	}
	switch {
	case typ.IsDir():
		fi, err := os.Lstat(abs)
		if err != nil {
			return e, false, nil
		}
		if !fi.IsDir() {
			e.Kind = kindExcluded // replaced meanwhile
			return e, true, nil
		}
		hash, excluded, err := w.dir(abs, rel, ign, false)
		if err != nil {
			return e, false, err
		}
		if excluded {
			e.Kind = kindExcluded
			return e, true, nil
		}
		e.Kind, e.Mode, e.Hash = kindDir, unixPerm(fi.Mode()), hash
		return e, true, nil
	case typ&fs.ModeSymlink != 0:
		target, err := os.Readlink(abs)
		if err != nil {
			return e, false, nil
		}
		hash, err := w.c.putObject([]byte(target))
		if err != nil {
			return e, false, err
		}
		e.Kind, e.Mode, e.Hash = kindLink, 0o777, hash
		return e, true, nil
	case typ.IsRegular():
		return w.file(abs, e)
	}
	e.Kind = kindExcluded // a socket, a fifo, a device
	return e, true, nil
}

// file records a regular file: from the index when its stat says it is
// unchanged, else by reading it into the store.
func (w *ckWalk) file(abs string, e ckEntry) (ckEntry, bool, error) {
	c := w.c
	fi, err := os.Lstat(abs)
	if err != nil {
		return e, false, nil
	}
	if !fi.Mode().IsRegular() || fi.Size() > c.set.MaxFileSize {
		e.Kind = kindExcluded
		return e, true, nil
	}
	st := ckStatOf(fi)
	e.Kind, e.Mode = kindFile, unixPerm(fi.Mode())
	if ie, ok := c.index[abs]; ok && ie.stat == st && st.Ctime < ie.seen-int64(racyWindow) {
		w.seen[abs] = true
		e.Hash = ie.hash
		return e, true, nil
	}
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		e.Kind, e.Mode = kindExcluded, 0 // unreadable: there, not recorded
		return e, true, nil
	}
	defer f.Close()
	opened, err := f.Stat()
	if err != nil || !opened.Mode().IsRegular() {
		e.Kind, e.Mode = kindExcluded, 0
		return e, true, nil
	}
	hash, over, err := c.putFile(f, c.set.MaxFileSize)
	if err != nil {
		return e, false, err
	}
	if over {
		e.Kind, e.Mode = kindExcluded, 0
		return e, true, nil
	}
	e.Hash = hash
	// Changed while it was read: record what was read, but do not trust
	// the stat next time.
	if after, err := f.Stat(); err == nil && ckStatOf(after) == ckStatOf(opened) && ckStatOf(opened) == st {
		c.index[abs] = ckIndexEntry{stat: st, seen: w.start, hash: hash}
		c.indexDirt = true
		w.seen[abs] = true
	}
	return e, true, nil
}

// unixPerm is a mode's permission bits as chmod takes them.
func unixPerm(m fs.FileMode) uint32 {
	p := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		p |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		p |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		p |= 0o1000
	}
	return p
}

// modeFromUnix is unixPerm's inverse.
func modeFromUnix(p uint32) fs.FileMode {
	m := fs.FileMode(p & 0o777)
	if p&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if p&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if p&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// cacheDirTag marks a cache directory (bford.info/cachedir): cargo's
// target/, and others, which are not recorded.
const cacheDirTag = "CACHEDIR.TAG"

func isCacheDirTag(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [43]byte
	n, _ := f.Read(b[:])
	return string(b[:n]) == "Signature: 8a477f597d28d172789f06886806bc55"
}
