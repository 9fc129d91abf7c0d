package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Pruning keeps the store within its limits: first each project within
// max_project_size, removing its oldest sessions' checkpoints but never
// its newest session's; then the whole store within max_total_size,
// removing the oldest sessions of any project. A session being recorded
// (keep) is never removed. After removing sessions, the objects no
// checkpoint reaches any more are deleted, and so are the index entries
// that name them. zot prunes on its own once a day, at the first
// checkpoint of a run; zot checkpoints prune does it at once.

// ckPruneReport is what a prune did.
type ckPruneReport struct {
	Removed       []string // "<project directory>: session <id>"
	Before, After int64    // bytes in the store
	Problems      []string // damaged manifests or trees met while marking
}

// prunePeriod is how often zot prunes on its own.
const prunePeriod = 24 * time.Hour

// maybeDailyPrune prunes when the last prune is a period old.
func (c *Checkpoints) maybeDailyPrune(keep string) {
	stamp := filepath.Join(c.home, "checkpoints", "last-prune")
	if st, err := os.Stat(stamp); err == nil && time.Since(st.ModTime()) < prunePeriod {
		return
	}
	if err := os.MkdirAll(filepath.Dir(stamp), 0o700); err != nil {
		return
	}
	os.WriteFile(stamp, nil, 0o600)
	now := time.Now()
	os.Chtimes(stamp, now, now)
	rep, err := PruneCheckpoints(c.home, c.set, keep)
	if err != nil && c.Log != nil {
		c.Log("checkpoints: prune: %v", err)
	}
	for _, p := range rep.Problems {
		if c.Log != nil {
			c.Log("checkpoints: prune: %s", p)
		}
	}
}

// PruneCheckpoints applies the size limits of set to the store in home.
func PruneCheckpoints(home string, set CheckpointSettings, keep string) (ckPruneReport, error) {
	var rep ckPruneReport
	base := filepath.Join(home, "checkpoints")
	entries, err := os.ReadDir(base)
	if errors.Is(err, os.ErrNotExist) {
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("prune checkpoints: %w", err)
	}
	var projects []string
	for _, e := range entries {
		if e.IsDir() {
			projects = append(projects, filepath.Join(base, e.Name()))
		}
	}
	for _, p := range projects {
		rep.Before += dirSize(p)
	}
	type candidate struct {
		project string
		info    ckSessionInfo
	}
	var all []candidate
	for _, p := range projects {
		if err := pruneProject(p, set.MaxProjectSize, keep, &rep); err != nil {
			return rep, err
		}
		list, _ := listCheckpointSessions(p)
		for _, s := range list {
			if s.ID != keep {
				all = append(all, candidate{p, s})
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].info.Last.Before(all[j].info.Last) })
	total := int64(0)
	for _, p := range projects {
		total += dirSize(p)
	}
	for _, cand := range all {
		if total <= set.MaxTotalSize {
			break
		}
		before := dirSize(cand.project)
		if err := removeSessions(cand.project, []string{cand.info.ID}, &rep); err != nil {
			return rep, err
		}
		total -= before - dirSize(cand.project)
	}
	rep.After = total
	return rep, nil
}

// pruneProject removes a project's oldest sessions until it fits in limit,
// keeping its newest session and keep.
func pruneProject(dir string, limit int64, keep string, rep *ckPruneReport) error {
	list, err := listCheckpointSessions(dir)
	if err != nil {
		return err
	}
	for i := 0; i < len(list)-1 && dirSize(dir) > limit; i++ {
		if list[i].ID == keep {
			continue
		}
		if err := removeSessions(dir, []string{list[i].ID}, rep); err != nil {
			return err
		}
	}
	return nil
}

// removeSessions deletes sessions' manifests and then what no remaining
// manifest reaches, under the project's lock.
func removeSessions(dir string, ids []string, rep *ckPruneReport) error {
	f, err := lockCheckpointDir(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	project := projectOfStore(dir)
	for _, id := range ids {
		if err := os.RemoveAll(filepath.Join(dir, "sessions", id)); err != nil {
			return fmt.Errorf("prune checkpoints: %w", err)
		}
		rep.Removed = append(rep.Removed, fmt.Sprintf("%s: session %s", project, id))
	}
	return collectGarbage(dir, rep)
}

// collectGarbage deletes the objects no manifest of dir reaches, drops the
// index entries that name them, and bumps the generation so that running
// zots read the index again. The caller holds the lock.
func collectGarbage(dir string, rep *ckPruneReport) error {
	c := &Checkpoints{dir: dir, known: map[string]bool{}, trees: map[string][]ckEntry{}}
	reach := map[string]bool{}
	var mark func(tree string)
	mark = func(tree string) {
		if tree == "" || reach[tree] {
			return
		}
		reach[tree] = true
		entries, err := c.tree(tree)
		if err != nil {
			rep.Problems = append(rep.Problems, err.Error())
			return
		}
		for _, e := range entries {
			switch e.Kind {
			case kindDir:
				mark(e.Hash)
			case kindFile, kindLink:
				reach[e.Hash] = true
			}
		}
	}
	sessions, err := listCheckpointSessions(dir)
	if err != nil {
		return err
	}
	for _, s := range sessions {
		recs, err := c.sessionRecords(s.ID)
		if err != nil {
			return err
		}
		for _, d := range recs.Damaged {
			rep.Problems = append(rep.Problems, d.Error())
		}
		for _, r := range recs.Records {
			for _, root := range r.Roots {
				mark(root.Before)
				mark(root.After)
			}
		}
	}
	objects := filepath.Join(dir, "objects")
	stale := time.Now().Add(-time.Hour)
	filepath.WalkDir(objects, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		name := d.Name()
		if strings.HasPrefix(name, ".tmp-") {
			// A crash's leftover; a snapshot running now holds the lock.
			if fi, err := d.Info(); err == nil && fi.ModTime().Before(stale) {
				os.Remove(path)
			}
			return nil
		}
		hash := filepath.Base(filepath.Dir(path)) + name
		if !reach[hash] {
			os.Remove(path)
		}
		return nil
	})
	c.index = nil
	if err := c.loadIndex(); err == nil {
		for path, e := range c.index {
			if !reach[e.hash] {
				delete(c.index, path)
				c.indexDirt = true
			}
		}
		if err := c.saveIndex(); err != nil {
			return err
		}
	}
	var gen [8]byte
	rand.Read(gen[:])
	return storeWrite(filepath.Join(dir, "gen"), []byte(hex.EncodeToString(gen[:])), true)
}

// projectOfStore is the directory a project store is for, or the store's
// own path when project.json cannot tell.
func projectOfStore(dir string) string {
	var p struct {
		Cwd string `json:"cwd"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "project.json")); err == nil && json.Unmarshal(b, &p) == nil && p.Cwd != "" {
		return p.Cwd
	}
	return dir
}

// dirSize is the bytes of the files beneath dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
