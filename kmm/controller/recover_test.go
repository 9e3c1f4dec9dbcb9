package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A reconcile that panics is recovered: the handler gets the request and
// the value, and the reconcile fails with an error instead; one that does
// not panic passes through untouched.
func TestRecovering(t *testing.T) {
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "node-1"}}
	var got []any
	onPanic := func(r reconcile.Request, v any) {
		if r != req {
			t.Errorf("handler got request %v, want %v", r, req)
		}
		got = append(got, v)
	}
	panicky := Recovering(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		panic(errors.New("assignment to entry in nil map"))
	}), onPanic)
	res, err := panicky.Reconcile(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "reconcile of nodemodulesconfig node-1 panicked: assignment to entry in nil map") || res != (reconcile.Result{}) {
		t.Errorf("Reconcile = %v, %v", res, err)
	}
	if len(got) != 1 {
		t.Fatalf("handler called %d times", len(got))
	}
	if re, ok := got[0].(error); !ok || !strings.Contains(re.Error(), "nil map") {
		t.Errorf("handler got %v", got[0])
	}

	want := errors.New("conflict")
	plain := Recovering(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{RequeueAfter: time.Second}, want
	}), onPanic)
	if res, err := plain.Reconcile(context.Background(), req); !errors.Is(err, want) || res.RequeueAfter != time.Second || len(got) != 1 {
		t.Errorf("Reconcile without a panic = %v, %v (handler calls %d)", res, err, len(got))
	}
}
