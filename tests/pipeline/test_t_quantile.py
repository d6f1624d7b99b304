"""The t quantile's table is scipy's function, bit for bit, and the job paths that use it do
not load scipy."""

import subprocess
import sys

import numpy as np
from scipy.special import stdtrit

from pipeline.t_quantile import T975, t975


def test_every_entry_is_scipys_value_bit_for_bit():
    df = np.arange(1, T975.size + 1, dtype=np.float64)
    assert np.array_equal(T975, stdtrit(df, 0.975))
    assert np.array_equal(t975(df[::-1]), stdtrit(df[::-1], 0.975))


def test_other_degrees_of_freedom_ask_scipy():
    df = np.array([[0.5, 3.0], [T975.size + 1.0, 2.5]])
    assert np.array_equal(t975(df), stdtrit(df, 0.975))
    assert t975(np.float64(7)) == stdtrit(7, 0.975)
    assert float(t975(4)) == float(stdtrit(4, 0.975))


def test_scale_model_and_flow_figures_do_not_load_scipy():
    code = (
        "import sys, numpy as np\n"
        "from pipeline.scales import rating_model\n"
        "from pipeline.flow_quality import flow_figures\n"
        "from pipeline.simulate import population_named\n"
        "rng = np.random.default_rng(0)\n"
        "item = np.repeat(np.arange(200), 5); worker = rng.integers(0, 30, item.size)\n"
        "fit = rating_model(item, worker, rng.integers(0, 6, item.size), low=0.0, high=5.0)\n"
        "assert np.isfinite(fit.low).all()\n"
        "list(flow_figures(population_named('uniform-0.8'), seeds=2, items=60, team=10,"
        " kinds=('cxc',)))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
