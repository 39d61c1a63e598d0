package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/rackstream/rackstream/processor"
)

// TransactionState returns the broker's state of the transaction of
// process id pid's producer in application app ("Ongoing" while one is
// open; "Empty", "CompleteCommit", ...), or why it could not be described.
// A test that must fault an exactly-once instance mid-transaction polls it
// for "Ongoing".
func TransactionState(adm *kadm.Client, app, pid string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id := processor.TransactionalID(app, pid)
	d, err := adm.DescribeTransactions(ctx, id)
	if err != nil {
		return fmt.Sprintf("describe transaction %s: %v", id, err)
	}
	tx, ok := d[id]
	switch {
	case !ok:
		return fmt.Sprintf("transaction %s: not described", id)
	case tx.Err != nil:
		return fmt.Sprintf("transaction %s: %v", id, tx.Err)
	}
	return tx.State
}
