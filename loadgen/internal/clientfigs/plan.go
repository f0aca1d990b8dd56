package clientfigs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Output is what the command printed (the tail of each stream, see Tail).
type Output struct {
	Stdout, Stderr []byte
}

// Plan is how one command's figures are read: the command as it is run
// (with a report file added when the tool writes one only when asked) and
// the tool it is.
type Plan struct {
	// Command is the command to run.
	Command []string
	// Note says what was added to the command ("" when nothing was), for
	// stderr.
	Note string
	// Tool is the tool recognised from the command line ("" when none:
	// its output may still be recognised).
	Tool string

	report string // the report file to read after the run
	dir    string // a temporary directory to remove
	args   []string
}

// Tools recognised from the command line.
const (
	K6             = "k6"
	Artillery      = "artillery"
	Tsung          = "tsung"
	WebsocketBench = "websocket-bench"
	Locust         = "locust"
)

// Prepare recognises the tool in command and, for k6 run and artillery
// run without a report file, adds one in a temporary directory (Close
// removes it).
func Prepare(command []string) (*Plan, error) {
	p := &Plan{Command: slices.Clone(command), args: command}
	tool, at := find(command)
	p.Tool = tool
	if tool == Locust {
		return p, p.locustCSV(at)
	}
	rf, ok := reportFlags[tool]
	if !ok {
		return p, nil
	}
	run := indexAfter(command, at, "run")
	if run < 0 {
		p.Tool = ""
		return p, nil
	}
	if path, ok := flagValue(command[run+1:], rf.long, rf.short); ok {
		p.report = path
		return p, nil
	}
	if err := p.addReport(run, rf.long, rf.file); err != nil {
		return nil, err
	}
	return p, nil
}

// reportFlags are, for each tool whose run writes a report file only when
// asked, the flag that names the file (long, and short: "" for none) and
// the file's name when Prepare adds one.
var reportFlags = map[string]struct{ long, short, file string }{
	K6:        {"--summary-export", "", "k6-summary.json"},
	Artillery: {"--output", "-o", "artillery-report.json"},
}

// locustCSV finds Locust's --csv PREFIX, whose PREFIX_stats.csv has its
// figures, or adds one after its name (at) in a temporary directory.
func (p *Plan) locustCSV(at int) error {
	if prefix, ok := flagValue(p.args[at+1:], "--csv", ""); ok {
		p.report = prefix + "_stats.csv"
		return nil
	}
	dir, err := os.MkdirTemp("", "loadgen-watch-")
	if err != nil {
		return fmt.Errorf("a temporary directory for locust --csv: %w", err)
	}
	p.dir = dir
	prefix := filepath.Join(dir, "locust")
	p.report = prefix + "_stats.csv"
	p.Command = slices.Concat(p.args[:at+1], []string{"--csv", prefix}, p.args[at+1:])
	p.Note = fmt.Sprintf("loadgen watch: added --csv %s to the locust command, to read its figures", prefix)
	return nil
}

// addReport inserts flag and a temporary file after command[run].
func (p *Plan) addReport(run int, flag, name string) error {
	dir, err := os.MkdirTemp("", "loadgen-watch-")
	if err != nil {
		return fmt.Errorf("a temporary file for %s %s: %w", p.Tool, flag, err)
	}
	p.dir = dir
	p.report = filepath.Join(dir, name)
	p.Command = slices.Concat(p.args[:run+1], []string{flag, p.report}, p.args[run+1:])
	p.Note = fmt.Sprintf("loadgen watch: added %s %s to the %s command, to read its figures", flag, p.report, p.Tool)
	return nil
}

// Close removes the temporary report file, if one was added.
func (p *Plan) Close() {
	if p.dir != "" {
		_ = os.RemoveAll(p.dir)
	}
}

// Read reads the figures after the command exited (with exitCode), from
// its report file or its output. Figures it cannot read are unknown; the
// error says why none could be read (nil with unknown figures: nothing
// was recognised).
func (p *Plan) Read(out Output, exitCode int) (Figures, error) {
	switch p.Tool {
	case K6:
		return readFile(p.report, "k6 summary", parseK6)
	case Artillery:
		return readFile(p.report, "artillery report", parseArtillery)
	case WebsocketBench:
		return parseWebsocketBench(out.Stdout, p.args, exitCode)
	case Tsung:
		return readTsung(out)
	case Locust:
		return readLocust(out, p.report)
	}
	if f, ok := parseClientLine(out.Stdout); ok {
		return f, nil
	}
	if dir := tsungLogDir(out); dir != "" {
		return readTsung(out)
	}
	return Unknown(), nil
}

func readFile(path, source string, parse func([]byte) (Figures, error)) (Figures, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Unknown(), fmt.Errorf("no %s: %w", source, err)
	}
	f, err := parse(raw)
	if err != nil {
		return Unknown(), fmt.Errorf("%s %s: %w", source, path, err)
	}
	f.Source = source
	return f, nil
}

// find returns the tool that command runs and the index of its name: the
// command itself, or an argument of a launcher (npx artillery, node
// .../artillery, env ... k6).
func find(command []string) (string, int) {
	for i, arg := range command {
		switch strings.TrimSuffix(filepath.Base(arg), ".exe") {
		case "k6":
			return K6, i
		case "artillery":
			return Artillery, i
		case "tsung":
			return Tsung, i
		case "websocket-bench":
			return WebsocketBench, i
		case "locust":
			return Locust, i
		}
		if strings.HasPrefix(arg, "-") && i > 0 {
			continue
		}
		if i > 0 && !isLauncher(command[:i]) {
			break
		}
	}
	return "", -1
}

// isLauncher reports whether the words before a tool's name only launch
// it (npx, node, env, nice, timeout ...).
func isLauncher(words []string) bool {
	for _, w := range words {
		switch filepath.Base(w) {
		case "npx", "node", "env", "nice", "timeout", "taskset", "prlimit", "sudo", "exec", "stdbuf":
			continue
		}
		if strings.HasPrefix(w, "-") || strings.Contains(w, "=") || isNumber(w) {
			continue
		}
		return false
	}
	return true
}

func isNumber(s string) bool {
	return s != "" && strings.Trim(s, "0123456789.smhx") == ""
}

func indexAfter(args []string, at int, word string) int {
	for i := at + 1; i < len(args); i++ {
		if args[i] == word {
			return i
		}
		if !strings.HasPrefix(args[i], "-") {
			return -1 // a subcommand other than word
		}
	}
	return -1
}

// flagValue finds a flag's value in args (--name V, --name=V, or the
// short form).
func flagValue(args []string, long, short string) (string, bool) {
	for i, a := range args {
		for _, name := range []string{long, short} {
			if name == "" {
				continue
			}
			if a == name && i+1 < len(args) {
				return args[i+1], true
			}
			if v, ok := strings.CutPrefix(a, name+"="); ok {
				return v, true
			}
		}
	}
	return "", false
}
