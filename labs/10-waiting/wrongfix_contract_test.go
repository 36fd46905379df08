package lab10_test

import "github.com/locklab/locklab/labs"

// contractWrongFixes are wrong fixes of the classes no lesson scenario
// looks for, caught by the contract (TestLab10_ExerciseContract): a tight
// polling loop, a poll every 5ms, a wait that ignores its context, an
// error dropped. They join the lab's table.
var contractWrongFixes = []labs.WrongFix{
	{
		Name: "no waiting at all: try again at once, in a tight loop",
		Edits: loop(`	for {
		ok, err := m.TryLock(ctx)
		if err != nil || ok {
			return err
		}
		m.hook(ctx, correct.HookRefused)
		if ctx.Err() != nil {
			return errors.Join(ErrNotObtained, ctx.Err())
		}
	}`),
		Caught: "a waiter that polls floods the server",
	},
	{
		Name: "poll every 5ms instead of listening (as labs.PollLock does)",
		Edits: loop(`	for {
		ok, err := m.TryLock(ctx)
		if err != nil || ok {
			return err
		}
		m.hook(ctx, correct.HookRefused)
		select {
		case <-ctx.Done():
			return errors.Join(ErrNotObtained, ctx.Err())
		case <-time.After(labs.PollInterval):
		}
	}`),
		Caught: "a waiter that polls floods the server",
	},
	{
		Name: "the right fix, but each wait bounded by a context of its own, not the caller's",
		Edits: loop(`	sub := m.client.Subscribe(ctx, m.key+":released")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		return errors.Join(ErrNotObtained, err)
	}
	for {
		ok, err := m.TryLock(ctx)
		if err != nil || ok {
			return err
		}
		m.hook(ctx, correct.HookRefused)
		wait, cancel := context.WithTimeout(context.Background(), m.ttl)
		_, _ = sub.ReceiveMessage(wait)
		cancel()
		if ctx.Err() != nil {
			return errors.Join(ErrNotObtained, ctx.Err())
		}
	}`),
		Caught: "Lock must honour its context",
	},
	{
		Name: "the right fix, but a refused try's error taken for \"taken\"",
		Edits: loop(`	sub := m.client.Subscribe(ctx, m.key+":released")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		return errors.Join(ErrNotObtained, err)
	}
	for {
		if ok, _ := m.TryLock(ctx); ok {
			return nil
		}
		m.hook(ctx, correct.HookRefused)
		wait, cancel := context.WithTimeout(ctx, m.ttl)
		_, _ = sub.ReceiveMessage(wait)
		cancel()
		if ctx.Err() != nil {
			return errors.Join(ErrNotObtained, ctx.Err())
		}
	}`),
		Caught: "Redis's error was dropped",
	},
	{
		Name: "the release told through a channel in the process, not through Redis",
		Edits: append(loop(`	for {
		ok, err := m.TryLock(ctx)
		if err != nil || ok {
			return err
		}
		m.hook(ctx, correct.HookRefused)
		select {
		case <-released: // a release in this process
		case <-time.After(m.ttl): // or a lease gone by
		case <-ctx.Done():
			return errors.Join(ErrNotObtained, ctx.Err())
		}
	}`), labs.Replace(`	if n == 0 {
		return ErrNotHeld
	}
	return nil
}`, `	if n == 0 {
		return ErrNotHeld
	}
	select {
	case released <- struct{}{}: // wake a waiter
	default:
	}
	return nil
}

// released carries one wake-up per release to this process's waiters.
var released = make(chan struct{}, 64)`)),
		Caught: "it must wake on the release",
	},
}

// sleepThenTry is a Lock that sleeps for sleep (a Go expression) after
// each refused try, honouring its context.
func sleepThenTry(sleep string) []labs.Edit {
	return loop(`	for {
		ok, err := m.TryLock(ctx)
		if err != nil || ok {
			return err
		}
		m.hook(ctx, correct.HookRefused)
		select {
		case <-ctx.Done():
			return errors.Join(ErrNotObtained, ctx.Err())
		case <-time.After(` + sleep + `):
		}
	}`)
}

// sleepWrongFixes are waiters that sleep between tries, slowly enough to
// send few commands a second: green (or caught in one schedule of three)
// before TestLab10_ExerciseWakeDelay measured how soon a waiter wakes
// (issue 35). The first is the README's own Black Friday.
var sleepWrongFixes = []labs.WrongFix{
	{
		Name:   "sleep a random 50-250 ms between tries (redsync's default)",
		Edits:  sleepThenTry("50*time.Millisecond + time.Duration(time.Now().UnixNano()%int64(200*time.Millisecond))"),
		Caught: "B sleeps between tries instead of waking on the release",
	},
	{
		Name:   "poll every 150 ms: few commands a second",
		Edits:  sleepThenTry("150*time.Millisecond"),
		Caught: "B sleeps between tries instead of waking on the release",
	},
}

func init() {
	wrongFixes = append(wrongFixes, contractWrongFixes...)
	wrongFixes = append(wrongFixes, sleepWrongFixes...)
}
