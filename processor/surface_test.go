package processor_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rackstream/rackstream/codec"
	"github.com/rackstream/rackstream/processor"
	"github.com/rackstream/rackstream/table"
)

const module = "github.com/rackstream/rackstream/"

// stateValues are the types of package state a library user may hold:
// plain settings, with no handle on a store.
var stateValues = []string{"LevelDBOptions", "Compression"}

// roots are the exported types of processor and table, generic ones
// instantiated: reflection cannot list a package's functions, but every
// function's results are among these types.
var roots = []any{
	processor.ChangelogLeaders(""), processor.Clock(0), (*processor.Context)(nil), processor.ErrorPolicy(""), (*processor.FreshView)(nil),
	(*processor.GlobalTable[string, string])(nil), processor.GlobalTableInfo{}, processor.GlobalTableOption(nil),
	(*processor.GlobalView)(nil), processor.Guarantee(""), processor.Handler[string, string](nil),
	(*processor.Input[string, string])(nil), processor.InputOption(nil), processor.KeyValue[string, string]{},
	(*processor.Keyed[string, string])(nil), processor.Options{}, (*processor.Output[string, string])(nil),
	(*processor.PartitionCountError)(nil), (*processor.PoisonError)(nil), processor.Punctuator(nil), processor.Replica{},
	processor.Retry{}, processor.Role(""), (*processor.Runtime)(nil), (*processor.Store[string, string])(nil),
	processor.StoreInfo{}, processor.StoreOption(nil), (*processor.StoreView)(nil),
	(*processor.Table[string, string])(nil), (*processor.TestDriver)(nil), processor.TestDriverOptions{},
	processor.TimerHandler[string](nil), (*processor.Timers[string])(nil), processor.TimestampExtractor(nil),
	processor.TopicCount{}, (*processor.Topology)(nil),
	processor.WindowResult[string, int64]{}, processor.Windowed[string]{},
	processor.Aggregator[string, string, int64]{}, processor.WindowOption(nil),
	(*processor.WindowedAggregation[string, string, int64])(nil), processor.OutputOption(nil),
	processor.WindowValue[int64]{}, processor.StoredWindow{},
	(*processor.Repartition[string, string])(nil),
	(*table.Mirror)(nil), table.Options{}, table.Typed[string, string]{},
}

// TestRootsNameEveryExportedType keeps roots whole: a type added to
// processor or table must be added there, so that the walk below sees it.
func TestRootsNameEveryExportedType(t *testing.T) {
	have := map[string]bool{}
	for _, r := range roots {
		typ := reflect.TypeOf(r)
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		name, _, _ := strings.Cut(typ.Name(), "[")
		have[typ.PkgPath()+"."+name] = true
	}
	for _, dir := range []string{".", "../table"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.TYPE {
					continue
				}
				for _, spec := range gd.Specs {
					if ts := spec.(*ast.TypeSpec); ts.Name.IsExported() && !have[module+f.Name.Name+"."+ts.Name.Name] {
						t.Errorf("roots lacks %s.%s", f.Name.Name, ts.Name.Name)
					}
				}
			}
		}
	}
}

// TestNoExportedPathReachesTheStateEngine walks every exported field,
// method result and method parameter reachable from the user-facing types
// of processor and table, and fails on any type of package state other
// than plain settings: a *state.DB, *state.Task or *state.Manager in a
// user's hands could write a store without its changelog, or race its task.
func TestNoExportedPathReachesTheStateEngine(t *testing.T) {
	seen := map[reflect.Type]string{}
	var walk func(typ reflect.Type, path string)
	walk = func(typ reflect.Type, path string) {
		if _, ok := seen[typ]; ok {
			return
		}
		seen[typ] = path
		named := typ
		for named.Kind() == reflect.Pointer {
			named = named.Elem()
		}
		if named.PkgPath() == module+"state" && !slices.Contains(stateValues, named.Name()) {
			t.Errorf("%s reaches %s", path, typ)
			return
		}
		switch typ.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Chan:
			walk(typ.Elem(), path)
		case reflect.Map:
			walk(typ.Key(), path)
			walk(typ.Elem(), path)
		case reflect.Func:
			for i := range typ.NumIn() {
				walk(typ.In(i), path)
			}
			for i := range typ.NumOut() {
				walk(typ.Out(i), path)
			}
		case reflect.Struct:
			// Fields of other modules' structs (a kgo.Record) cannot hold
			// one of ours.
			if !strings.HasPrefix(typ.PkgPath(), module) {
				return
			}
			for f := range typ.Fields() {
				if f.IsExported() {
					walk(f.Type, path+"."+f.Name)
				}
			}
		}
		if typ.PkgPath() != "" && !strings.HasPrefix(typ.PkgPath(), module) {
			return
		}
		for m := range typ.Methods() {
			if m.IsExported() {
				walk(m.Type, path+"."+m.Name+"()")
			}
		}
		if typ.Kind() != reflect.Pointer && typ.Kind() != reflect.Interface && typ.Name() != "" {
			walk(reflect.PointerTo(typ), path)
		}
	}
	for _, r := range roots {
		typ := reflect.TypeOf(r)
		walk(typ, typ.String())
	}
	if _, ok := seen[reflect.TypeFor[*processor.StoreView]()]; !ok {
		t.Fatal("the walk never reached *processor.StoreView: it follows too little")
	}
}

// TestReadViewsHaveNoWriteMethod: what Runtime.Replica and
// Runtime.GlobalTable hand out reads and nothing else, and a Mirror a user
// opens writes nothing either. A method added to a view must be added
// here, after checking that it cannot write.
func TestReadViewsHaveNoWriteMethod(t *testing.T) {
	reads := []string{"Checkpoint", "Err", "Get", "Lag", "Name", "Scan", "Task"}
	windowReads := []string{"AllWindows", "Windows"}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[*processor.StoreView](),
		reflect.TypeFor[*processor.FreshView](),
		reflect.TypeFor[processor.Replica](),
		reflect.TypeFor[*processor.GlobalView](),
		reflect.TypeFor[*table.Mirror](),
	} {
		allowed := reads
		switch typ {
		case reflect.TypeFor[processor.Replica]():
			allowed = []string{"Fresh", "Store", "Stores"}
		case reflect.TypeFor[*processor.StoreView](), reflect.TypeFor[*processor.FreshView]():
			allowed = append(slices.Clone(reads), windowReads...)
		case reflect.TypeFor[*processor.GlobalView]():
			allowed = append(slices.Clone(reads), "Lags", "Positions", "Topic")
		case reflect.TypeFor[*table.Mirror]():
			allowed = append(slices.Clone(reads), "Close", "Lags", "Partition", "Partitions", "Positions", "Topic", "WaitCaughtUp")
		}
		for m := range typ.Methods() {
			if !slices.Contains(allowed, m.Name) {
				t.Errorf("%s has method %s, which is not a read", typ, m.Name)
			}
		}
	}
}

// TestAStoreWritesOnlyThroughItsTask: a store's Put and Delete, and an
// output's Emit, take the Context of a running handler call, and refuse a
// zero Context or one kept after its call returned.
func TestAStoreWritesOnlyThroughItsTask(t *testing.T) {
	topo := processor.New("surface")
	counts := processor.NewStore(topo, "counts", codec.String(), codec.Int64())
	out := processor.NewOutput(topo, "out", codec.String(), codec.Int64())
	var kept *processor.Context
	in := processor.NewInput(topo, "in", codec.String(), codec.String(),
		func(ctx *processor.Context, key, _ string) error {
			kept = ctx
			return counts.Put(ctx, key, 1)
		})
	d, err := processor.NewTestDriver(topo, processor.TestDriverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := processor.Pipe(d, in, "a", "x"); err != nil {
		t.Fatal(err)
	}
	for name, ctx := range map[string]*processor.Context{"a zero Context": {}, "a Context kept after its call": kept} {
		if err := counts.Put(ctx, "b", 2); err == nil {
			t.Errorf("Put with %s succeeded", name)
		}
		if err := counts.Delete(ctx, "a"); err == nil {
			t.Errorf("Delete with %s succeeded", name)
		}
		if err := out.Emit(ctx, "a", 1); err == nil {
			t.Errorf("Emit with %s succeeded", name)
		}
		if _, _, err := counts.Get(ctx, "a"); err == nil {
			t.Errorf("Get with %s succeeded", name)
		}
	}
	got, err := processor.StoreValues(d, counts)
	if err != nil || len(got) != 1 || got["a"] != 1 {
		t.Errorf("store after the refused writes: %v %v; want only a=1", got, err)
	}
	if recs := d.Emitted("out"); len(recs) != 0 {
		t.Errorf("output after the refused emits: %d records", len(recs))
	}
}
