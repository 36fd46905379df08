package retry_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/locklab/locklab/internal/module"
)

// This file is the lint that keeps package retry the one retry loop (and
// package pubsub the one resubscribe loop): a lock package that writes a
// loop of attempts of its own fails it. It reads the non-test Go sources
// of every lock package and flags a for loop that
//
//   - counts attempts in its header: for attempt := ..., for tries := ...
//     (also attempts, try, retry, retries);
//   - waits afresh on every pass: time.Sleep(...), <-time.After(...) or
//     time.NewTimer(...) in its body (a timer made once before the loop
//     and Reset inside is a schedule, not a retry);
//   - or grows or jitters its wait: an assignment in its body that doubles
//     a variable (d = 2*d, min(2*d, ...), d *= 2, d <<= 1), or a wait
//     whose duration calls math/rand, together with a wait in the body
//     (the above, or a timer's Reset).
//
// Function literals and nested loops in a loop's body are judged on their
// own. Such a loop belongs on retry.Do or retry.Repeat (with
// retry.Doubling for a growing, jittered pause), or on pubsub.Resubscribe.

// lockPackages are the directories, under the module's root, that the lint
// reads.
var lockPackages = []string{"naive", "correct", "watchdog", "reentrant", "redlock", "fencing", "etcdlock", "zklock", "pglock"}

// allowed are the loops the lint lets stand, by "dir/file.go:Func", each
// with why. An entry that matches no loop fails the lint too: delete it
// when its loop moves.
var allowed = map[string]string{}

// A finding is one loop the lint flags.
type finding struct {
	where string // "dir/file.go:Func"
	line  int
	why   string
}

func (f finding) String() string { return fmt.Sprintf("%s (line %d): %s", f.where, f.line, f.why) }

func TestNoHandWrittenRetryLoops(t *testing.T) {
	root, err := module.Root("the lint reads the lock packages' sources")
	if err != nil {
		t.Fatal(err)
	}
	var found []finding
	for _, dir := range lockPackages {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("lock package %s: no Go files (%v); the lint must read every lock package", dir, err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			fs, err := scan(dir+"/"+filepath.Base(path), src)
			if err != nil {
				t.Fatal(err)
			}
			found = append(found, fs...)
		}
	}
	used := map[string]bool{}
	for _, f := range found {
		if why, ok := allowed[f.where]; ok {
			used[f.where] = true
			t.Logf("allowed: %v (%s)", f, why)
			continue
		}
		t.Errorf("hand-written retry loop: %v; put it on retry.Do or retry.Repeat (retry.Doubling for a growing pause), or pubsub.Resubscribe", f)
	}
	for where := range allowed {
		if !used[where] {
			t.Errorf("allowed loop %s matches no loop any more: delete its entry in internal/retry/loops_test.go", where)
		}
	}
}

// TestTheLintCatches runs the lint's scanner on loops written by hand, the
// shapes redlock had before it moved onto retry and pubsub, and on loops
// that wait without retrying, which it must let pass.
func TestTheLintCatches(t *testing.T) {
	tests := []struct {
		name, body string
		flagged    bool
	}{
		{"a release sent again with a doubling sleep (redlock's Unlock)", `
	deadline, pause := time.Now().Add(time.Second), d
	for busy() && time.Now().Add(pause).Before(deadline) {
		time.Sleep(pause/2 + rand.N(pause/2+1))
		pause = min(2*pause, time.Until(deadline))
		send()
	}`, true},
		{"a round sent again after a jittered timer (redlock's queued rounds)", `
	for {
		if !send() {
			return
		}
		w.pause = min(max(2*w.pause, d), e)
		t := time.NewTimer(w.pause/2 + rand.N(w.pause/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}`, true},
		{"a resubscribe loop with a fixed pause (the Notifiers')", `
	for {
		select {
		case <-done:
			return
		case <-time.After(pause):
		}
		if subscribe() {
			return
		}
	}`, true},
		{"an attempt counter", `
	for attempt := 1; ; attempt++ {
		if send() {
			return
		}
	}`, true},
		{"a growing pause on a timer made before the loop", `
	t := time.NewTimer(d)
	for range 10 {
		<-t.C
		d *= 2
		t.Reset(d)
	}`, true},
		{"a schedule: one timer, Reset to the next check", `
	check := time.NewTimer(next())
	defer check.Stop()
	for {
		select {
		case <-signal:
		case <-check.C:
			check.Reset(next())
		}
	}`, false},
		{"a grace timer armed once inside a loop", `
	var grace <-chan time.Time
	for answered := 0; answered < n; {
		select {
		case <-confirmations:
			answered++
			grace = time.After(d)
		case <-grace:
			return
		}
	}`, false},
		{"a ticker", `
	t := time.NewTicker(d)
	defer t.Stop()
	for range t.C {
		renew()
	}`, false},
		{"a wait in a goroutine started per pass (judged on its own)", `
	for i := range n {
		go func() {
			time.Sleep(d)
			work(i)
		}()
	}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "package p\n\nfunc f() {" + tt.body + "\n}\n"
			fs, err := scan("p/p.go", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(fs) > 0; got != tt.flagged {
				t.Errorf("scan flagged %v (%v); want %v", got, fs, tt.flagged)
			}
		})
	}
}

// counter matches the names of a for loop's variable that count attempts.
var counter = regexp.MustCompile(`^(?i:attempts?|tries|try|retry|retries)$`)

// scan returns the loops of one source file that the lint flags.
func scan(name string, src []byte) ([]finding, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	var found []finding
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		where := name + ":" + funcName(fd)
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			var body *ast.BlockStmt
			switch l := n.(type) {
			case *ast.ForStmt:
				body = l.Body
				if as, ok := l.Init.(*ast.AssignStmt); ok && as.Tok == token.DEFINE {
					for _, lhs := range as.Lhs {
						if id, ok := lhs.(*ast.Ident); ok && counter.MatchString(id.Name) {
							found = append(found, finding{where, fset.Position(l.Pos()).Line, "counts its attempts (for " + id.Name + " := ...)"})
							return true
						}
					}
				}
			case *ast.RangeStmt:
				body = l.Body
			default:
				return true
			}
			if why := judge(body); why != "" {
				found = append(found, finding{where, fset.Position(n.Pos()).Line, why})
			}
			return true
		})
	}
	return found, nil
}

// judge returns why a loop's body makes it a retry loop, or "".
func judge(body *ast.BlockStmt) string {
	var fresh, reset, grows, jitter bool
	ast.Inspect(body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.FuncLit, *ast.ForStmt, *ast.RangeStmt:
			return false // judged on their own
		case *ast.UnaryExpr:
			if x.Op == token.ARROW && isCall(x.X, "time", "After") {
				fresh = true
			}
		case *ast.CallExpr:
			switch {
			case isCall(x, "time", "Sleep"), isCall(x, "time", "NewTimer"):
				fresh = true
				jitter = jitter || callsRand(x)
			case isCall(x, "time", "After"):
				jitter = jitter || callsRand(x)
			case isMethod(x, "Reset"):
				reset = true
				jitter = jitter || callsRand(x)
			}
		case *ast.AssignStmt:
			grows = grows || doubles(x)
		}
		return true
	})
	switch {
	case fresh:
		return "waits afresh on every pass (time.Sleep, <-time.After or time.NewTimer in the loop)"
	case reset && (grows || jitter):
		return "grows or jitters the wait between its passes"
	}
	return ""
}

// doubles reports whether an assignment doubles what it assigns to:
// d *= ..., d <<= ..., or d = an expression with 2*d, d*2, d<<k or d+d.
func doubles(as *ast.AssignStmt) bool {
	if len(as.Lhs) != 1 {
		return false
	}
	lhs := exprString(as.Lhs[0])
	if as.Tok == token.MUL_ASSIGN || as.Tok == token.SHL_ASSIGN {
		return true
	}
	if as.Tok != token.ASSIGN && as.Tok != token.DEFINE || len(as.Rhs) != 1 {
		return false
	}
	found := false
	ast.Inspect(as.Rhs[0], func(n ast.Node) bool {
		b, ok := n.(*ast.BinaryExpr)
		if !ok || found {
			return !found
		}
		x, y := exprString(b.X), exprString(b.Y)
		switch b.Op {
		case token.MUL:
			found = x == lhs || y == lhs
		case token.SHL:
			found = x == lhs
		case token.ADD:
			found = x == lhs && y == lhs
		}
		return !found
	})
	return found
}

// isCall reports whether e is a call of pkg.fn.
func isCall(e ast.Expr, pkg, fn string) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	s, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == pkg && s.Sel.Name == fn
}

// isMethod reports whether c calls a method (or function of a package)
// named name.
func isMethod(c *ast.CallExpr, name string) bool {
	s, ok := c.Fun.(*ast.SelectorExpr)
	return ok && s.Sel.Name == name
}

// callsRand reports whether c's arguments call math/rand (rand.N and the
// like).
func callsRand(c *ast.CallExpr) bool {
	found := false
	for _, a := range c.Args {
		ast.Inspect(a, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := s.X.(*ast.Ident); ok && id.Name == "rand" {
					found = true
				}
			}
			return !found
		})
	}
	return found
}

// funcName is "Recv.Name" for a method, "Name" for a function.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok { // a generic receiver
		t = ix.X
	}
	return exprString(t) + "." + fd.Name.Name
}

// exprString spells an identifier or a selector chain (w.pause); other
// expressions give "".
func exprString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		if s := exprString(x.X); s != "" {
			return s + "." + x.Sel.Name
		}
	case *ast.ParenExpr:
		return exprString(x.X)
	}
	return ""
}
