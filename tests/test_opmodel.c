/* test_opmodel.c - operator models fitted to synthetic profiles whose true
 * curves are known: recovery within stated tolerances despite noise, the band,
 * extrapolation, the latency floor, GEMM shape, collective group scaling,
 * generation scaling, kernel classes, and CSV errors naming file/line/field. */
#include "testutil.h"

#include "ccsweep/cost/opmodel.h"

#include <sys/stat.h>
#include <unistd.h>

/* Deterministic multiplicative noise in [-amp, amp] (a 32-bit LCG). */
static double noise(unsigned *s, double amp)
{
    *s = *s * 1664525u + 1013904223u;
    return 1 + amp * (2.0 * (*s >> 8) / 16777216.0 - 1);
}

typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

static void put(buf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if ((size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        b->cap = b->cap ? 2 * b->cap : 65536;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
}

static ccs_opmodel *load(buf *b)
{
    ccs_err err;
    ccs_opmodel *om = opmodel_parse(b->p, b->n, "synthetic.csv", &err);
    if (!om)
        print_error("%s\n", err.msg);
    assert_non_null(om);
    free(b->p);
    return om;
}

/* A memory-bound kernel: 2 us + bytes / 5 GB/s, 3% noise, 4 KiB .. 64 MiB. */
static double mem_truth(double bytes)
{
    return 2e-6 + bytes / 5e9;
}

static ccs_opmodel *mem_profile(double amp)
{
    buf b = {0};
    unsigned s = 42;
    put(&b,
        "# profiling_wall_s: 12.5\n# host: test\nop,dtype,m,n,k,bytes,group,level,time_s,reps\n");
    for (double e = 1024; e <= 16.0 * 1048576; e *= sqrt(2.0))
        for (int r = 0; r < 3; r++) {
            double bytes = floor(e) * 4 * 2; /* read + write, fp32 */
            put(&b, "elementwise,fp32,%.0f,1,1,%.0f,1,,%.9e,5\n", floor(e), bytes,
                mem_truth(bytes) * noise(&s, amp));
        }
    return load(&b);
}

static ccs_op mem_op(double bytes, double flops)
{
    ccs_op o;
    memset(&o, 0, sizeof o);
    o.kind = CCS_OP_ELEMENTWISE;
    o.dtype = CCS_FP32;
    o.bytes = bytes;
    o.flops = flops;
    o.batch = 1;
    o.count = 1;
    return o;
}

static ccs_opscale unit_cost(void)
{
    ccs_opscale c;
    memset(&c, 0, sizeof c);
    c.f_flops = c.f_mem = c.f_intra = c.f_inter = c.f_lat = 1;
    c.net_bw_factor = 1;
    return c;
}

/* Inside the range the curve is within 4% of the truth at points between the
 * measured sizes (3% noise); the band is about the noise (1%..4%). */
static void test_fit_recovers_curve(void **state)
{
    (void)state;
    ccs_opmodel *om = mem_profile(0.03);
    ccs_opscale c = unit_cost();
    for (double bytes = 12e3; bytes < 100e6; bytes *= 2.7) {
        ccs_op o = mem_op(bytes, bytes / 8);
        ccs_optime t;
        assert_int_equal(opmodel_eval(om, &c, &o, &t), 0);
        assert_rel(t.t, mem_truth(bytes), 0.04);
        assert_true(t.extrap == 0);
        assert_true(t.lo < t.t && t.t < t.hi);
        double band = log(t.hi / t.t);
        assert_true(band > 0.01 && band < 0.04);
    }
    opmodel_free(om);
}

/* Beyond the largest measurement (128 MiB): linear in bytes, flagged with
 * work / largest work, band wider than inside. Below the smallest: the floor. */
static void test_extrapolation_and_floor(void **state)
{
    (void)state;
    ccs_opmodel *om = mem_profile(0.03);
    ccs_opscale c = unit_cost();
    ccs_optime in, out, lo;
    ccs_op o = mem_op(1e6, 0), s = mem_op(100, 0);
    double wmax = opmodel_max_work(om, &o);
    assert_true(wmax > 64e6 && wmax < 140e6);
    ccs_op x = mem_op(4 * wmax, 0);
    assert_int_equal(opmodel_eval(om, &c, &o, &in), 0);
    assert_int_equal(opmodel_eval(om, &c, &x, &out), 0);
    assert_rel(out.extrap, 4.0, 1e-9);
    assert_rel(out.t, mem_truth(4 * wmax), 0.05);
    assert_true(log(out.hi / out.t) > log(in.hi / in.t));
    assert_int_equal(opmodel_eval(om, &c, &s, &lo), 0);
    assert_true(lo.extrap == 0);
    assert_rel(lo.t, mem_truth(1024 * 8), 0.05); /* floor: the smallest measured time */
    opmodel_free(om);
}

/* GEMMs with a known shape cost: t = 1 us + F / 50 GFLOP/s + 0.6 ns per
 * element of A + 0.3 ns per element of C. A skinny GEMM (n = 64) of the same
 * FLOPs as a square one is much slower; the shape-aware work recovers both
 * within 5% (2% noise), a FLOPs-only curve could not (they differ > 20%). */
static double gemm_truth(double m, double n, double k)
{
    return 1e-6 + 2 * m * n * k / 50e9 + 0.6e-9 * m * k + 0.3e-9 * m * n;
}

static ccs_op gemm_op(double m, double n, double k)
{
    ccs_op o;
    memset(&o, 0, sizeof o);
    o.kind = CCS_OP_GEMM;
    o.dtype = CCS_FP32;
    o.m = m, o.n = n, o.k = k, o.batch = 1, o.count = 1;
    o.flops = 2 * m * n * k;
    return o;
}

static void test_gemm_shape(void **state)
{
    (void)state;
    buf b = {0};
    unsigned s = 7;
    put(&b, "op,dtype,m,n,k,bytes,group,level,time_s,reps\n");
    static const double d[] = {32, 64, 128, 256, 512, 1024, 2048};
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < 7; j++)
            for (int l = 0; l < 7; l++) {
                double m = d[i], n = d[j], k = d[l];
                put(&b, "gemm,fp32,%g,%g,%g,0,1,,%.9e,3\n", m, n, k,
                    gemm_truth(m, n, k) * noise(&s, 0.02));
            }
    ccs_opmodel *om = load(&b);
    ccs_opscale c = unit_cost();
    struct {
        double m, n, k;
    } q[] = {{724, 724, 724}, {8192, 64, 724}, {96, 1500, 700}, {1500, 300, 180}, {40, 40, 3000}};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        ccs_op o = gemm_op(q[i].m, q[i].n, q[i].k);
        ccs_optime t;
        assert_int_equal(opmodel_eval(om, &c, &o, &t), 0);
        assert_rel(t.t, gemm_truth(q[i].m, q[i].n, q[i].k), 0.05);
    }
    /* the skinny/square pair above: equal FLOPs within 1%, times apart > 20% */
    assert_rel(2.0 * 8192 * 64 * 724, 2.0 * 724 * 724 * 724, 0.01);
    assert_true(gemm_truth(8192, 64, 724) > 1.2 * gemm_truth(724, 724, 724));
    opmodel_free(om);
}

/* An all-reduce measured over 2 ranks serves 4 ranks at the ring's volume:
 * 2*3/4 of the buffer per rank instead of 2*1/2, i.e. the curve read at 1.5x. */
static void test_collective_group_scaling(void **state)
{
    (void)state;
    buf b = {0};
    put(&b, "op,dtype,m,n,k,bytes,group,level,time_s,reps\n");
    for (double x = 1024; x <= 64.0 * 1048576; x *= 2)
        put(&b, "allreduce,fp32,0,0,0,%.0f,2,intra,%.9e,10\n", x, 5e-6 + x / 2e9);
    ccs_opmodel *om = load(&b);
    ccs_opscale c = unit_cost();
    ccs_op o;
    memset(&o, 0, sizeof o);
    o.kind = CCS_OP_ALLREDUCE;
    o.dtype = CCS_FP32;
    o.bytes = 8e6;
    o.count = 1;
    o.group = o.per_node = 4;
    ccs_optime g4, g2;
    assert_int_equal(opmodel_eval(om, &c, &o, &g4), 0);
    o.group = o.per_node = 2;
    o.bytes = 12e6;
    assert_int_equal(opmodel_eval(om, &c, &o, &g2), 0);
    assert_rel(g4.t, g2.t, 1e-12);
    assert_rel(g2.t, 5e-6 + 12e6 / 2e9, 0.02);
    /* no inter-node curve: the caller falls back to the synthetic one */
    o.per_node = 1;
    assert_int_equal(opmodel_eval(om, &c, &o, &g2), -1);
    opmodel_free(om);
}

/* Generations: memory-bound time / f_mem and latency / f_lat. */
static void test_generation_scaling(void **state)
{
    (void)state;
    ccs_opmodel *om = mem_profile(0);
    ccs_opscale c = unit_cost(), g = unit_cost();
    g.f_mem = 3;
    g.f_flops = 10; /* not a memory-bound resource: no effect here */
    ccs_op o = mem_op(32e6, 0);
    ccs_optime t0, t1;
    assert_int_equal(opmodel_eval(om, &c, &o, &t0), 0);
    assert_int_equal(opmodel_eval(om, &g, &o, &t1), 0);
    /* the latency part (2 us) stays, the rest runs 3x faster */
    assert_rel(t1.t, 2e-6 + (t0.t - 2e-6) / 3, 0.02);
    g.f_lat = 2;
    assert_int_equal(opmodel_eval(om, &g, &o, &t1), 0);
    assert_rel(t1.t, 1e-6 + (t0.t - 2e-6) / 3, 0.02);
    opmodel_free(om);
}

/* Two element-wise kernel classes (0.1 and 1 FLOP/byte, the second 4x slower
 * per byte): an op is served by the class nearest its FLOPs per byte. */
static void test_kernel_classes(void **state)
{
    (void)state;
    buf b = {0};
    put(&b, "op,dtype,m,n,k,bytes,group,level,time_s,reps\n");
    for (double e = 4096; e <= 4e6; e *= 2) {
        put(&b, "elementwise,fp32,%.0f,1,1,%.0f,1,,%.9e,3\n", e, 10 * e, 10 * e / 8e9);
        put(&b, "elementwise,fp32,%.0f,1,8,%.0f,1,,%.9e,3\n", e, 8 * e, 8 * e / 2e9);
    }
    ccs_opmodel *om = load(&b);
    ccs_opscale c = unit_cost();
    ccs_optime t;
    ccs_op cheap = mem_op(1e6, 0.12e6), dear = mem_op(1e6, 0.9e6);
    assert_int_equal(opmodel_eval(om, &c, &cheap, &t), 0);
    assert_rel(t.t, 1e6 / 8e9, 0.01);
    assert_int_equal(opmodel_eval(om, &c, &dear, &t), 0);
    assert_rel(t.t, 1e6 / 2e9, 0.01);
    opmodel_free(om);
}

/* Kinds the profile lacks fall back to the synthetic curve in cost_op. */
static void test_missing_curve_and_meta(void **state)
{
    (void)state;
    ccs_opmodel *om = mem_profile(0);
    ccs_opscale c = unit_cost();
    ccs_op o = gemm_op(512, 512, 512);
    ccs_optime t;
    assert_int_equal(opmodel_eval(om, &c, &o, &t), -1);
    o = mem_op(1e6, 0);
    o.dtype = CCS_BF16;
    assert_int_equal(opmodel_eval(om, &c, &o, &t), -1);
    assert_string_equal(opmodel_meta(om, "profiling_wall_s"), "12.5");
    assert_string_equal(opmodel_meta(om, "host"), "test");
    assert_null(opmodel_meta(om, "nothing"));
    assert_int_equal(opmodel_curves(om), 1);
    opmodel_free(om);
    opmodel_free(NULL);
}

/* Errors name the file, the line and the field. */
static void test_parse_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"op,dtype,m,n,k,bytes,group,level,time_s,reps\ngemm,fp32,64,64,x,0,1,,1e-5,3\n",
         "bad.csv:2: field 'k': expected a non-negative number, got 'x'"},
        {"# c\nconv,fp32,64,64,64,0,1,,1e-5,3\n", "bad.csv:2: field 'op': unknown operator 'conv'"},
        {"gemm,int4,64,64,64,0,1,,1e-5,3\n", "bad.csv:1: field 'dtype': unknown dtype 'int4'"},
        {"gemm,fp32,64,64,64,0,1,1e-5,3\n", "bad.csv:1: expected 10 comma-separated fields"},
        {"\n\nallreduce,fp32,0,0,0,1024,2,,1e-5,3\n", "bad.csv:3: field 'level'"},
        {"allreduce,fp32,0,0,0,1024,1,intra,1e-5,3\n", "bad.csv:1: field 'group'"},
        {"allreduce,fp32,0,0,0,1024,2,across,1e-5,3\n",
         "bad.csv:1: field 'level': expected intra, inter or empty, got 'across'"},
        {"elementwise,fp32,4,4,1,64,1,,0,3\n",
         "bad.csv:1: field 'time_s': expected a positive number, got '0'"},
        {"elementwise,fp32,4,4,1,0,1,,1e-6,3\n", "bad.csv:1: field 'bytes'"},
        {"gemm,fp32,0,64,64,0,1,,1e-5,3\n", "bad.csv:1: field 'm'"},
        {"gemm,fp32,64,64,64,0,1,,1e-5,2.5\n", "bad.csv:1: field 'reps': expected an integer"},
        {"# only comments\nop,dtype,m,n,k,bytes,group,level,time_s,reps\n",
         "bad.csv: no measurements"},
        /* values whose products, logs or weights overflow: refused at parse
         * time, at their line (they once drove the fit past its buffers) */
        {"gemm,fp32,1e300,1e300,1e300,0,1,,1e-3,1\n",
         "bad.csv:1: field 'm': expected a number in [0, 4294967296], got '1e300'"},
        {"op,dtype,m,n,k,bytes,group,level,time_s,reps\ngemm,fp32,64,64,64,0,1,,1e-300,1\n",
         "bad.csv:2: field 'time_s': expected a number in [1e-12, 1000000], got '1e-300'"},
        {"elementwise,fp32,4,4,1,1e300,1,,1e-6,3\n", "bad.csv:1: field 'bytes'"},
        {"elementwise,fp32,4,4,1,64,1,,1e-6,1e300\n", "bad.csv:1: field 'reps'"},
        {"attention,fp32,4294967296,4294967296,4294967296,0,16777216,,1e-3,1\n",
         "bad.csv:1: field 'm*n*k*group': the work 4*m*n*k*group"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ccs_err err;
        memset(&err, 0, sizeof err);
        ccs_opmodel *om = opmodel_parse(cases[i].text, strlen(cases[i].text), "bad.csv", &err);
        assert_null(om);
        if (!strstr(err.msg, cases[i].msg)) {
            print_error("case %zu: got '%s', expected '%s'\n", i, err.msg, cases[i].msg);
            fail();
        }
    }
    ccs_err err;
    assert_null(opmodel_load("tests/data/no-such-profile.csv", &err));
    assert_non_null(strstr(err.msg, "tests/data/no-such-profile.csv: cannot open"));
    /* a FIFO is refused at once (it would block), as is any non-regular file */
    alarm(20);
    char dir[] = "/tmp/ccsweep-profileXXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/fifo.csv", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_null(opmodel_load(path, &err));
    assert_non_null(strstr(err.msg, "fifo.csv: not a regular file"));
    unlink(path);
    assert_null(opmodel_load(dir, &err));
    assert_non_null(strstr(err.msg, "not a regular file"));
    rmdir(dir);
    alarm(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_recovers_curve),
        cmocka_unit_test(test_extrapolation_and_floor),
        cmocka_unit_test(test_gemm_shape),
        cmocka_unit_test(test_collective_group_scaling),
        cmocka_unit_test(test_generation_scaling),
        cmocka_unit_test(test_kernel_classes),
        cmocka_unit_test(test_missing_curve_and_meta),
        cmocka_unit_test(test_parse_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
