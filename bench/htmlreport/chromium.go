package htmlreport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/locklab/locklab/internal/proc"
)

// ErrNoChromium is returned by [Check] when no Chromium binary is found.
var ErrNoChromium = errors.New("htmlreport: chromium not found (Debian/Ubuntu: apt-get install chromium; or name the binary in LOCKLAB_CHROMIUM)")

// findChromium returns the path of the Chromium binary: $LOCKLAB_CHROMIUM if
// set (an error wrapping [ErrNoChromium] if it names no program), else the
// first of chromium, chromium-browser, google-chrome on the PATH; it
// returns [ErrNoChromium] if there is none.
func findChromium() (string, error) {
	if p := os.Getenv("LOCKLAB_CHROMIUM"); p != "" {
		bin, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%w: LOCKLAB_CHROMIUM=%s: %v", ErrNoChromium, p, err)
		}
		return bin, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// probe is added to a copy of the page that Chromium loads: after the
// load it marks every image that did not decode and every section with
// nothing but its heading, and says it ran.
const probe = `<script>addEventListener("load", function () {
  for (const img of document.images) {
    if (!img.complete || img.naturalWidth === 0) img.setAttribute("data-broken", "");
  }
  for (const s of document.querySelectorAll("section")) {
    const c = s.cloneNode(true);
    for (const h of c.querySelectorAll("h2")) h.remove();
    if (c.textContent.trim() === "" && !c.querySelector("img, svg")) s.setAttribute("data-empty", "");
  }
  document.body.setAttribute("data-probed", "");
});</script>`

// checkTimeout bounds each Chromium run.
const checkTimeout = 90 * time.Second

// Check opens the page at htmlPath in headless Chromium, writes a
// screenshot of its first screen (1400×2400) to pngPath, and returns an
// error naming every problem it found: a console message (the page has
// no script, so any is an error), an image whose naturalWidth is 0, a
// section with nothing but its heading, a page without sections, or a
// src or href that leaves the page (the page must load nothing). With
// pngPath "" it takes no screenshot. It returns [ErrNoChromium] when
// Chromium is missing.
func Check(ctx context.Context, htmlPath, pngPath string) error {
	bin, err := findChromium()
	if err != nil {
		return err
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil {
		return err
	}
	var problems []string
	problems = append(problems, outsideRefs(page)...)

	abs, err := filepath.Abs(htmlPath)
	if err != nil {
		return err
	}
	if pngPath != "" {
		if _, _, err := chromium(ctx, bin, "--screenshot="+pngPath, "--window-size=1400,2400", "file://"+abs); err != nil {
			return err
		}
		if fi, err := os.Stat(pngPath); err != nil || fi.Size() == 0 {
			return fmt.Errorf("htmlreport: chromium wrote no screenshot to %s", pngPath)
		}
	}

	probed, err := os.CreateTemp(filepath.Dir(abs), ".probe-*.html")
	if err != nil {
		return err
	}
	defer os.Remove(probed.Name())
	i := bytes.LastIndex(page, []byte("</body>"))
	if i < 0 {
		return fmt.Errorf("htmlreport: %s has no </body>", htmlPath)
	}
	withProbe := append(append(append([]byte{}, page[:i]...), probe...), page[i:]...)
	if _, err := probed.Write(withProbe); err != nil {
		probed.Close()
		return err
	}
	if err := probed.Close(); err != nil {
		return err
	}
	dom, logs, err := chromium(ctx, bin, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000", "--dump-dom", "file://"+probed.Name())
	if err != nil {
		return err
	}
	problems = append(problems, consoleErrors(logs)...)
	problems = append(problems, domProblems(dom)...)
	if len(problems) > 0 {
		return fmt.Errorf("htmlreport: %s: %s", htmlPath, strings.Join(problems, "; "))
	}
	return nil
}

// chromium runs headless Chromium with args and returns its stdout and
// stderr. Chromium runs in a process group of its own that dies with this
// process (internal/proc); when ctx ends or checkTimeout passes, the whole
// group is killed, and once the browser exits any helper left in the group
// is too. The goroutine that waits for it returns when it exits.
func chromium(ctx context.Context, bin string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	home, err := os.MkdirTemp("", "htmlreport-chromium-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(home)
	all := append([]string{"--headless=new", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
		"--no-first-run", "--user-data-dir=" + filepath.Join(home, "profile")}, args...)
	cmd := exec.Command(bin, all...)
	// Chromium's crash handler and caches write under HOME.
	cmd.Env = append(os.Environ(), "HOME="+home)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := proc.Start(cmd); err != nil {
		return "", "", fmt.Errorf("htmlreport: start %s: %w", bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = proc.Signal(cmd, syscall.SIGKILL)
		err = errors.Join(<-done, ctx.Err())
	}
	_ = proc.Signal(cmd, syscall.SIGKILL) // helpers left in the group; none is the usual answer
	if err != nil {
		return "", "", fmt.Errorf("htmlreport: %s %s: %w\n%s", bin, strings.Join(args, " "), err, lastLines(errb.String(), 10))
	}
	return out.String(), errb.String(), nil
}

var consoleLine = regexp.MustCompile(`:CONSOLE[^\]]*\] (.*)`)

// consoleErrors returns the console messages in Chromium's log.
func consoleErrors(logs string) []string {
	var out []string
	for _, m := range consoleLine.FindAllStringSubmatch(logs, -1) {
		out = append(out, "console: "+m[1])
	}
	return out
}

var (
	brokenImg = regexp.MustCompile(`<img[^>]*\bdata-broken\b[^>]*>`)
	altAttr   = regexp.MustCompile(`\balt="([^"]*)"`)
	emptySec  = regexp.MustCompile(`<section[^>]*\bid="([^"]*)"[^>]*\bdata-empty\b`)
	refAttr   = regexp.MustCompile(`\b(?:src|href)="([^"]*)"`)
)

// domProblems reads the DOM the probe marked.
func domProblems(dom string) []string {
	var out []string
	if !strings.Contains(dom, "data-probed") {
		return []string{"the probe did not run (the page did not finish loading)"}
	}
	for _, img := range brokenImg.FindAllString(dom, -1) {
		name := "?"
		if m := altAttr.FindStringSubmatch(img); m != nil {
			name = m[1]
		}
		out = append(out, "broken image "+name)
	}
	for _, m := range emptySec.FindAllStringSubmatch(dom, -1) {
		out = append(out, "empty section #"+m[1])
	}
	if !strings.Contains(dom, "<section") {
		out = append(out, "no section")
	}
	return out
}

// outsideRefs returns the src and href values that load or lead outside
// the page: anything but a data: URI or a #fragment that the page holds.
func outsideRefs(page []byte) []string {
	var out []string
	for _, m := range refAttr.FindAllSubmatch(page, -1) {
		ref := string(m[1])
		switch {
		case strings.HasPrefix(ref, "data:"):
		case strings.HasPrefix(ref, "#"):
			if !bytes.Contains(page, []byte(`id="`+ref[1:]+`"`)) {
				out = append(out, "link to a missing anchor "+ref)
			}
		default:
			out = append(out, "reference outside the page: "+ref)
		}
	}
	return out
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(ls[max(0, len(ls)-n):], "\n")
}
