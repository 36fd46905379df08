// Package htmlreport writes report.html, one self-contained page made from
// a bench results directory: the verdicts first (one sentence per job: the
// lock to pick, its figure, its ratio to the best peer and to the floor,
// "tie" inside the run's A/A spread), then the fault matrix whose cells
// open their run's timeline, every plot, tables that fit a screen, and the
// timelines as swim-lane pictures. The page loads nothing: its CSS is
// inline, its images are data: URIs and its timelines inline SVG, and a
// matrix cell opens its timeline with CSS (:target), without a script.
//
// The page is made from the files the bench writes (summary.json,
// faults.json, machine.json, plots/, timelines/, faults_heatmap.png) and
// from the locks the bench ran ([Lock]: whose each one is and what it runs
// on), which [Write] keeps beside them in locks.json, so a results
// directory holds all a report needs ([Render] makes the page again).
// [Verdicts] are the page's verdicts as values, computed from summary.json
// as report.md's summary computes its ratios (medians of same-round
// ratios, ours over the peer's).
//
// [Check] opens a page in headless Chromium (Debian's chromium) and fails
// on a console message, an image that does not decode, a section left
// empty, or a reference to anything outside the page; it also keeps a
// screenshot of the first screen (1400×2400). The package's own test runs
// it on a small results directory kept in testdata (a short real run), so
// CI checks the page a real run makes.
package htmlreport
