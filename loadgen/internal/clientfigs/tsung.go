package clientfigs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// tsungLogDir finds the log directory of a tsung run in its output:
// tsung's own "Log directory is: DIR", or the recipe's (scripts/tsung/run.sh)
// "log: DIR", whose tsung logs are under DIR/log/*/.
var (
	tsungOwn    = regexp.MustCompile(`(?m)^Log directory is: (\S+)\s*$`)
	tsungRecipe = regexp.MustCompile(`(?m)^log: (\S+)\s*$`)
)

func tsungLogDir(out Output) string {
	for _, b := range [][]byte{out.Stdout, out.Stderr} {
		if m := tsungOwn.FindSubmatch(b); m != nil {
			return string(m[1])
		}
	}
	if m := tsungRecipe.FindSubmatch(out.Stdout); m != nil {
		logs, _ := filepath.Glob(filepath.Join(string(m[1]), "log", "*"))
		if len(logs) > 0 {
			return logs[len(logs)-1]
		}
	}
	return ""
}

// readTsung reads the tsung.log of the run found in its output.
func readTsung(out Output) (Figures, error) {
	dir := tsungLogDir(out)
	if dir == "" {
		return Unknown(), errors.New(`no tsung log directory in its output ("Log directory is: DIR")`)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "tsung.log"))
	if err != nil {
		return Unknown(), fmt.Errorf("no tsung log: %w", err)
	}
	f, err := parseTsung(raw, tsungRecipe.Match(out.Stdout))
	if err != nil {
		return Unknown(), fmt.Errorf("tsung log %s: %w", dir, err)
	}
	return f, nil
}

// parseTsung reads tsung.log's stats dumps. A counter's line is
// "stats: NAME PERIOD TOTAL" (the last dump's TOTAL is the run's); a
// sample's "stats: NAME COUNT MEAN STDDEV MAX MIN ..." (the run's count is
// the sum of the dumps' COUNT). Connections: websocket_succ (upgrades that
// succeeded; connect without WebSocket sessions) done, plus
// websocket_fail and error_connect_* attempted. Messages only for the
// recipe (recipe: its every message's echo is checked by a <match>): match
// + nomatch each way; unknown otherwise, since a request without a <match>
// is counted nowhere apart from the connects and closes.
func parseTsung(raw []byte, recipe bool) (Figures, error) {
	counters := map[string]int64{}
	samples := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	seen := false
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || fields[0] != "stats:" || strings.HasPrefix(fields[1], "{") {
			continue
		}
		seen = true
		name := fields[1]
		switch len(fields) {
		case 4: // a counter: period, total
			n, err := strconv.ParseFloat(fields[3], 64)
			if err == nil {
				counters[name] = int64(n)
			}
		default: // a sample: count, mean, ...
			n, err := strconv.ParseFloat(fields[2], 64)
			if err == nil {
				samples[name] += int64(n)
			}
		}
	}
	if !seen {
		return Unknown(), errors.New("no stats dump in it")
	}
	f := Unknown()
	f.Source = "tsung log"
	connectErrors := int64(0)
	for name, n := range counters {
		if strings.HasPrefix(name, "error_connect_") {
			connectErrors += n
		}
	}
	ok, ws := counters["websocket_succ"], counters["websocket_succ"]+counters["websocket_fail"] > 0
	if !ws {
		ok = samples["connect"]
	}
	f.OK = int(ok)
	f.Attempts = int(ok + counters["websocket_fail"] + connectErrors)
	if recipe {
		f.Source = "tsung log (scripts/tsung recipe)"
		f.Sent = counters["match"] + counters["nomatch"]
		f.Received = f.Sent
	}
	return f, nil
}
