package host

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/plugin"
)

// Prefix starts the file name of every plugin executable:
// gauntlet-<kind>-<name>.
const Prefix = "gauntlet-"

var fileNamePattern = regexp.MustCompile(`^gauntlet-(evaluator|channel|tool)-(.+)$`)

// ParseName splits a plugin executable's file name into its kind and the
// name it is registered under (the evaluator type, the channel type, the
// tool's function name). ok is false for a name that is not a plugin's.
// On Windows the name must end in ".exe", which is not part of the
// result.
func ParseName(fileName string) (kind plugin.Kind, name string, ok bool) {
	if runtime.GOOS == "windows" {
		base, isExe := strings.CutSuffix(strings.ToLower(fileName), ".exe")
		if !isExe {
			return "", "", false
		}
		fileName = fileName[:len(base)]
	}
	m := fileNamePattern.FindStringSubmatch(fileName)
	if m == nil {
		return "", "", false
	}
	kind, name = plugin.Kind(m[1]), m[2]
	if kind == plugin.KindTool {
		return kind, name, harness.ValidFunctionName(name)
	}
	return kind, name, harness.ValidID(name)
}

// found is a plugin executable in the plugins directory.
type found struct {
	file string // the file name, the plugin's name
	path string
	kind plugin.Kind
	typ  string
}

// discover lists the plugin executables in dir: files named
// gauntlet-<kind>-<name> (ParseName) that are executable. A missing
// directory holds no plugins.
func discover(dir string, log *slog.Logger) ([]found, error) {
	if dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read plugins directory: %w", err)
	}
	var out []found
	for _, e := range entries {
		kind, typ, ok := ParseName(e.Name())
		if !ok {
			if strings.HasPrefix(e.Name(), Prefix) {
				log.Warn("plugins: ignored a file whose name is not gauntlet-{evaluator,channel,tool}-<name>", slog.String("file", e.Name()))
			}
			continue
		}
		path := filepath.Join(dir, e.Name())
		fi, err := os.Stat(path) // follows symbolic links
		switch {
		case err != nil:
			log.Warn("plugins: ignored an unreadable file", slog.String("file", e.Name()), slog.Any("error", err))
			continue
		case !fi.Mode().IsRegular():
			log.Warn("plugins: ignored a name that is not a regular file", slog.String("file", e.Name()))
			continue
		case runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0:
			log.Warn("plugins: ignored a file that is not executable", slog.String("file", e.Name()))
			continue
		}
		abs, err := filepath.Abs(path)
		if err == nil {
			path = abs
		}
		out = append(out, found{file: e.Name(), path: path, kind: kind, typ: typ})
	}
	return out, nil
}

// ErrChecksumMismatch reports a plugin executable whose sha256 is not the
// one pinned in Options.Checksums; the plugin is not started.
var ErrChecksumMismatch = errors.New("checksum mismatch")

// fileSHA256 is the hex sha256 of a file's content.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// normaliseChecksums checks the pinned checksums and lower-cases them.
func normaliseChecksums(in map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(in))
	for name, sum := range in {
		sum = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(sum, "sha256:")))
		if b, err := hex.DecodeString(sum); err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("checksum of plugin %s: want 64 hex digits of a sha256, got %q: %w", name, in[name], harness.ErrInvalid)
		}
		out[name] = sum
	}
	return out, nil
}
