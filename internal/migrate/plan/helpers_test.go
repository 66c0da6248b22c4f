package plan_test

import (
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

var cmpSorted = cmpopts.SortSlices(func(a, b string) bool { return a < b })

func ref(name string) *corev1.LocalObjectReference { return &corev1.LocalObjectReference{Name: name} }
