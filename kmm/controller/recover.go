package controller

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// PanicHandler learns of a reconcile of req that panicked with v.
type PanicHandler func(req reconcile.Request, v any)

// Recovering returns r with a recover around each reconcile: a panic goes
// to onPanic, and the reconcile returns an error instead (controller-
// runtime retries it). The owner of the reconciler learns of the panic
// from onPanic, as a value, rather than from controller-runtime's log of
// its own recovery.
func Recovering(r reconcile.Reconciler, onPanic PanicHandler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (res reconcile.Result, err error) {
		defer func() {
			if v := recover(); v != nil {
				onPanic(req, v)
				res, err = reconcile.Result{}, fmt.Errorf("reconcile of nodemodulesconfig %s panicked: %v", req.Name, v)
			}
		}()
		return r.Reconcile(ctx, req)
	})
}
