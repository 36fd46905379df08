// Package lab02 holds the exercise of lab 02 (check, then set): the
// checkout service's handler for the payment provider's "paid" callback.
package lab02

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// ChargeOnce handles one delivery of the payment provider's "paid"
// callback for an order: it charges the customer, by calling charge,
// unless the order has been charged already. It reports whether this
// delivery charged.
//
// The provider delivers a callback again when it did not hear back in
// time, and two instances of the service can handle two deliveries of the
// same event at the same moment. A lock around the handler helps, but a
// lock can fail (labs 03 to 09 show how): the charge itself must happen
// once. Exactly once: never twice, and not zero times when a charge fails
// and the provider delivers the event again.
//
// As first written, ChargeOnce checks a marker key, charges, then sets the
// marker. Run `make exercise LAB=02`: it fails until two deliveries of one
// event can no longer both charge, and a failed charge no longer stops the
// next delivery from charging.
func ChargeOnce(ctx context.Context, client *redis.Client, orderID, eventID string, charge func(context.Context) error) (bool, error) {
	marker := "charged:order:" + orderID // which event charged the order

	// Your code here (Lab 02): between this check and the SET below, the
	// other delivery can check too.
	err := client.Get(ctx, marker).Err()
	if err == nil {
		return false, nil // charged already
	}
	if !errors.Is(err, redis.Nil) {
		return false, err
	}
	if err := charge(ctx); err != nil {
		return false, err
	}
	return true, client.Set(ctx, marker, eventID, 0).Err()
}
