package policy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// debounce is how long Start waits after a file system event for more of the same change
// (an editor's write-rename, a ConfigMap's symlink swap) before reloading.
const debounce = 100 * time.Millisecond

// Start watches the policy directories and reloads the policy set whenever their content
// changes, until ctx ends; it returns nil then. File system events trigger a reload within
// ~100ms and a poll every Options.PollInterval catches whatever events miss (network file
// systems, a directory replaced as a whole). A ConfigMap update, an atomic swap of the
// ..data symlink, is seen through the top-level symlinks. Reloads happen only when the
// content changed; a failed reload keeps the previous set active (see Status).
//
// Start makes the Engine a controller-runtime manager.Runnable: mgr.Add(engine).
func (e *Engine) Start(ctx context.Context) error {
	if len(e.opts.Dirs) == 0 {
		<-ctx.Done()
		return nil
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	w, err := fsnotify.NewWatcher()
	if err != nil {
		e.log.Error(err, "cannot watch the policy directories; polling only", "interval", e.opts.PollInterval)
	} else {
		defer w.Close()
		events, errs = w.Events, w.Errors
		e.watchDirs(w)
	}
	poll := time.NewTicker(e.opts.PollInterval)
	defer poll.Stop()
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	// A change between New (or the previous Start) and the watches above raised no event.
	_ = e.reloadIfChanged(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-events:
			settle.Reset(debounce)
			continue
		case err := <-errs:
			e.log.Error(err, "watching the policy directories")
			continue
		case <-poll.C:
		case <-settle.C:
		}
		// Errors are in Status, the log and the metric; the previous set stays active.
		_ = e.reloadIfChanged(ctx)
		if w != nil {
			e.watchDirs(w)
		}
	}
}

// NeedLeaderElection tells controller-runtime that every replica watches its own policies.
func (e *Engine) NeedLeaderElection() bool { return false }

// watchDirs (re-)adds a watch on every policy directory and every visible subdirectory;
// adding an already watched directory is a no-op, and directories that appeared since are
// picked up.
func (e *Engine) watchDirs(w *fsnotify.Watcher) {
	add := func(dir string) {
		if err := w.Add(dir); err != nil {
			e.log.V(1).Info("cannot watch a policy directory", "dir", dir, "error", err.Error())
		}
	}
	for _, root := range e.opts.Dirs {
		add(root) // explicitly: the root may be a symlink, which WalkDir does not enter
		entries, err := os.ReadDir(root)
		if err != nil {
			continue // reported by the reload
		}
		for _, ent := range entries {
			if !ent.IsDir() || strings.HasPrefix(ent.Name(), ".") {
				continue
			}
			_ = filepath.WalkDir(filepath.Join(root, ent.Name()), func(path string, d os.DirEntry, err error) error {
				switch {
				case err != nil:
					return nil //nolint:nilerr // an unreadable directory is reported by the reload
				case !d.IsDir():
					return nil
				case strings.HasPrefix(d.Name(), "."):
					return filepath.SkipDir
				}
				add(path)
				return nil
			})
		}
	}
}
