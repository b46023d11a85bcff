"""Statistics of an experiment: per-task reducers, then metrics across tasks and between treatments.

Pure: plain data in, frozen results out; no files, pytest, docker or subprocess. Deterministic: nothing
depends on time or on the order of the input, and the only randomness (Monte Carlo permutations) is
seeded. Data edge cases never raise: no trials, n < k, all passed, all failed and unscored values give
NaN or a typed ``Insufficient`` with a reason. (Impossible arguments, such as c > n, raise ValueError.)

Inputs and the reducer
    ``TrialOutcome(task, treatment, trial, passed, score)``; ``passed=None`` or a missing / NaN score is
    *unscored*, which is not *failed*. ``outcomes_from_records`` makes errored trials unscored on both
    counts. ``summarize_tasks`` reduces the trials of each (task, treatment) to n (scored trials), c
    (passed), the pass rate c/n and the mean score; unscored trials are left out of both.

pass@k (one task)
    Chance that at least one of k trials passes, by the unbiased estimator of HumanEval (Chen et al.,
    2021): 1 - C(n-c, k) / C(n, k), computed as 1 - prod_{i=n-c+1}^{n} (1 - k/i), and 1.0 when n - c < k.
pass^k (one task), two forms
    ``pass_hat_k``: chance that all of k trials pass, unbiased, C(c, k) / C(n, k) (tau-bench, Yao et al.,
    2024), computed as prod_{i<k} (c-i)/(n-i). ``pass_hat_k_observed``: the original Comet eval's observed
    form, 1.0 when every scored trial passed, else 0.0 (a lower bound that ignores k); the two agree at k = n.
    All three are NaN when n < k. At k = 1 pass@1 = pass^1 = c/n.
k plan
    ``plan_ks`` takes k from the ladder 1, 2, 5, 10, 20, 50, ... up to ``max_k`` (10) but never above the
    fewest scored trials of any task compared, and returns ``KPlan(ks, clamped_from, reason)`` naming the
    task that forced the clamp. Tasks with no scored trial are left out of the minimum and named.

Across tasks (``mean_over_tasks``, ``summarize_treatments``)
    The task is the statistical unit: the estimate is the mean of per-task values (pass rate, mean score,
    pass@k, pass^k), every task weighing the same. Its standard error is the clustered one of Miller,
    "Adding Error Bars to Evals" (2024), in the per-task-means form: SE = sd(task values) / sqrt(T) with
    T tasks and sd with T - 1 degrees of freedom. Why this form rather than the cluster-robust sandwich
    over trials: the estimand weights tasks equally, not trials (errored trials make trial counts
    unequal); the spread of task means already contains both the between-task variance and the trial
    noise within tasks (Miller's resampling section), so trials of one task are never treated as
    independent; and with equal trial counts the two formulas agree up to a factor sqrt((T-1)/T).
    The 95% interval is mean +- t_{T-1} * SE (Student t, not 1.96: suites have few tasks), clipped to
    [0, 1] for rates. Below two tasks SE and interval are NaN.
Plain rates (``wilson_interval``)
    Wilson score interval for successes / trials: inside [0, 1], sensible at 0/n and n/n. Right for the
    trials of one task; for all trials pooled (``TreatmentStats.pooled``) it is descriptive only, as it
    ignores the clustering of trials in tasks.

Between two treatments (``compare_treatments``)
    Per task, treatment minus baseline of the pass rate or of the mean weighted score. Only tasks with a
    value under both are paired (the others are listed as ``unpaired``); below ``min_tasks`` (3) the
    answer is ``Insufficient``. Reported: mean difference, tasks improved / regressed / unchanged, and
    - p-value: paired sign-flip permutation test over tasks (two-sided, statistic |sum of differences|).
      Under "no effect" each difference is equally likely to carry either sign, an assumption that holds
      at any n without normality. Exact over all 2^n sign patterns for n <= 16; above, 20,000 patterns
      drawn with a fixed seed, p = (1 + hits) / (1 + draws). Symmetric under swapping the treatments.
    - 95% interval: paired t-interval on the differences, mean +- t_{n-1} se with se = sd / sqrt(n).
      Chosen over a bootstrap over tasks because the percentile bootstrap is too narrow at the small n
      of eval suites and needs a seed; the t-interval is deterministic and standard. Near the boundary
      it can disagree with the permutation p-value; the p-value is the test, the interval the size of
      the effect. For pass rates se is never below the binomial floor (``binomial_floor``): the SE the
      trials' own binomial noise gives the mean difference, each side of each task taking the SE its
      Wilson interval implies; all of it when every difference is the same, its 5% chi-square quantile
      (df n - 1) when some spread was seen. Without it, zero observed spread (all passing under both)
      gave a point interval "+0.0% to +0.0%"; with it, 10 tasks x 10 trials all passing give +-7 points.

Power (``tasks_needed``, ``trials_needed``)
    Tasks for a paired comparison: the smallest n at which the paired t test (the noncentral t
    distribution with n - 1 degrees of freedom, ``t_test_power``) reaches the power, with sd_d the
    observed standard deviation of per-task differences; never below the 6 tasks (at alpha 0.05) that
    the exact sign-flip test needs to reach p <= alpha at all. Not estimated (None, with the reason)
    when sd_d is 0: no spread observed is not "no spread". The z formula used before was about two
    tasks short (power 0.75 at its answer). Trials of one task, per treatment, to detect a pass-rate
    change delta from an observed rate p: two-proportion formula (Fleiss, no continuity correction).
    Defaults: delta 0.10 (ten points), alpha 0.05, power 0.80.

Excluded trials (``impute_excluded``, ``fisher_exact``)
    The per-task summaries with excluded trials put back as passes or failures, for the verdict's
    bounds (scaffold.reports.verdicts); Fisher's exact test of two exclusion rates.

Agreement (``calibrate``, ``cohen_kappa``, ``pearson``)
    A scoring rater (the LLM judge's task_completion) against a pass/fail truth (the validators):
    agreement at a threshold, Cohen's kappa and the point-biserial correlation, "insufficient" below 10
    trials or with one class only (scaffold.stats.agreement).
"""

from scaffold.stats.aggregate import TreatmentStats, summarize_treatments
from scaffold.stats.agreement import Calibration, calibrate, cohen_kappa, pearson
from scaffold.stats.exclusions import fisher_exact, impute_excluded
from scaffold.stats.outcomes import TaskSummary, TrialOutcome, outcomes_from_records, summarize_tasks
from scaffold.stats.paired import (
    Insufficient,
    Metric,
    PairedComparison,
    binomial_floor,
    compare_treatments,
    sign_flip_p_value,
)
from scaffold.stats.passk import KPlan, k_ladder, pass_at_k, pass_hat_k, pass_hat_k_observed, plan_ks
from scaffold.stats.power import SampleSize, t_test_power, tasks_needed, trials_needed
from scaffold.stats.rates import Estimate, Rate, mean_over_tasks, wilson_interval

__all__ = [
    "Calibration",
    "Estimate",
    "Insufficient",
    "KPlan",
    "Metric",
    "PairedComparison",
    "Rate",
    "SampleSize",
    "TaskSummary",
    "TreatmentStats",
    "TrialOutcome",
    "binomial_floor",
    "calibrate",
    "cohen_kappa",
    "compare_treatments",
    "fisher_exact",
    "impute_excluded",
    "k_ladder",
    "mean_over_tasks",
    "outcomes_from_records",
    "pass_at_k",
    "pass_hat_k",
    "pass_hat_k_observed",
    "pearson",
    "plan_ks",
    "sign_flip_p_value",
    "summarize_tasks",
    "summarize_treatments",
    "t_test_power",
    "tasks_needed",
    "trials_needed",
    "wilson_interval",
]
