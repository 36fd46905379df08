// Package report renders a bench run: report.md, summary.json, the
// chapter's claims table, the plots, README's generated blocks and, for
// the fault scoreboard, faults.md and its heatmap. Results holds one
// speed run's rows and figures; the fault scoreboard's cells come from
// package faults as data. It runs nothing.
package report
