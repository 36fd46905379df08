// Package lab14 holds the code of lab 14 (the database as the lock).
//
// Order 1001 lives in PostgreSQL, in the table orders (id, status, token):
// the status the workers write, and the fencing token of the last write
// that the store accepted. [Orders] opens it; its writes come unchecked
// ([Orders.Write], the broken store) or checked against the token
// ([Orders.WriteFenced]). [Hooked] lets the lab stop a worker right before
// a write leaves it. [ShipOrder] in exercise.go is the learner's write.
package lab14

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/locklab/locklab/pglock"
)

// HookBeforeWrite is the step a [Hooked] database reaches right before it
// sends a statement that writes (INSERT, UPDATE, DELETE).
const HookBeforeWrite = "before-write"

// Hooked returns db with hook called, with [HookBeforeWrite], right before
// each statement that writes is sent. Reads go through untouched.
func Hooked(db pglock.DB, hook func(ctx context.Context, point string)) pglock.DB {
	return &hooked{db: db, hook: hook}
}

type hooked struct {
	db   pglock.DB
	hook func(ctx context.Context, point string)
}

func writes(sql string) bool {
	w := strings.ToUpper(strings.TrimSpace(sql))
	return strings.HasPrefix(w, "UPDATE") || strings.HasPrefix(w, "INSERT") || strings.HasPrefix(w, "DELETE")
}

func (h *hooked) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if writes(sql) {
		h.hook(ctx, HookBeforeWrite)
	}
	return h.db.Exec(ctx, sql, args...)
}

func (h *hooked) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if writes(sql) {
		h.hook(ctx, HookBeforeWrite)
	}
	return h.db.QueryRow(ctx, sql, args...)
}
