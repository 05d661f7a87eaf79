"""The task set and the reference code that computes every expected answer.

    python reference.py          # rewrite dabench.jsonl from data/
    python reference.py --check  # fail if dabench.jsonl differs from what the code computes

Each task is a function: its docstring-free body computes the answers from the committed CSV
files in ``data/`` (pandas, numpy, scipy) and returns them as strings in the rounding its format
asks for. The question, constraints and format are declared with it. Anyone can re-derive the
answers by running this file.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

HERE = Path(__file__).parent
DATA = HERE / "data"
OUT = HERE / "dabench.jsonl"


def csv(name: str) -> pd.DataFrame:
    return pd.read_csv(DATA / name)


def f(value: float, decimals: int) -> str:
    text = f"{value:.{decimals}f}"
    return "0" if decimals == 0 and text == "-0" else text


@dataclass(frozen=True)
class Spec:
    id: str
    level: str
    files: tuple[str, ...]
    question: str
    constraints: str
    format: str
    compute: Callable[[], dict[str, str]]


TASKS: list[Spec] = []


def task(
    id: str, level: str, files: str, question: str, constraints: str, format: str
) -> Callable[[Callable[[], dict[str, str]]], Callable[[], dict[str, str]]]:
    def register(fn: Callable[[], dict[str, str]]) -> Callable[[], dict[str, str]]:
        names = tuple(f"data/{n}" for n in files.split())
        TASKS.append(Spec(id, level, names, question, constraints, format, fn))
        return fn

    return register


def _cars() -> pd.DataFrame:
    cars = csv("cars.csv")
    cars["year"] = pd.to_datetime(cars["Year"]).dt.year
    return cars


def _weather() -> pd.DataFrame:
    weather = csv("seattle_weather.csv")
    weather["date"] = pd.to_datetime(weather["date"], format="%Y/%m/%d")
    return weather


def _stocks() -> pd.DataFrame:
    stocks = csv("stocks.csv")
    stocks["date"] = pd.to_datetime(stocks["date"], format="%b %d %Y")
    return stocks


def _cancer() -> pd.DataFrame:
    return csv("breast_cancer.csv")


# --- easy: one step ------------------------------------------------------------------------------


@task("iris-mean-sepal", "easy", "iris.csv",
      "What is the average sepal length of the flowers in the iris table?",
      "Use all rows. Round to 2 decimal places.",
      "@mean_sepal_length[value]")  # fmt: skip
def _() -> dict[str, str]:
    return {"mean_sepal_length": f(csv("iris.csv")["sepal_length"].mean(), 2)}


@task("iris-shape", "easy", "iris.csv",
      "How big is the iris table: how many rows and how many columns does it have?",
      "Count data rows (not the header) and all columns.",
      "@rows[number of rows] @columns[number of columns]")  # fmt: skip
def _() -> dict[str, str]:
    table = csv("iris.csv")
    return {"rows": str(table.shape[0]), "columns": str(table.shape[1])}


@task("iris-max-petal-virginica", "easy", "iris.csv",
      "What is the longest petal among the virginica flowers?",
      "Petal length in cm, rounded to 1 decimal place.",
      "@max_petal_length[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("iris.csv")
    return {"max_petal_length": f(t[t.species == "virginica"].petal_length.max(), 1)}


@task("wine-count-cultivar1", "easy", "wine.csv",
      "How many of the wines come from cultivar 1?",
      "The cultivar column holds 0, 1 or 2.",
      "@count[number of wines]")  # fmt: skip
def _() -> dict[str, str]:
    return {"count": str(int((csv("wine.csv").cultivar == 1).sum()))}


@task("wine-median-alcohol", "easy", "wine.csv",
      "What is the median alcohol content of these wines?",
      "Round to 2 decimal places.",
      "@median_alcohol[value]")  # fmt: skip
def _() -> dict[str, str]:
    return {"median_alcohol": f(csv("wine.csv").alcohol.median(), 2)}


@task("cancer-count-malignant", "easy", "breast_cancer.csv",
      "How many of the tumours in the breast cancer data were diagnosed malignant?",
      "Use the diagnosis column.",
      "@malignant[count]")  # fmt: skip
def _() -> dict[str, str]:
    return {"malignant": str(int((_cancer().diagnosis == "malignant").sum()))}


@task("cancer-mean-radius", "easy", "breast_cancer.csv",
      "What is the average of the mean_radius measurement over all tumours?",
      "Round to 2 decimal places.",
      "@mean_radius[value]")  # fmt: skip
def _() -> dict[str, str]:
    return {"mean_radius": f(_cancer().mean_radius.mean(), 2)}


@task("diabetes-mean-bmi", "easy", "diabetes.csv",
      "What is the average BMI of the patients in the diabetes study?",
      "Round to 2 decimal places.",
      "@mean_bmi[value]")  # fmt: skip
def _() -> dict[str, str]:
    return {"mean_bmi": f(csv("diabetes.csv").bmi.mean(), 2)}


@task("diabetes-max-progression", "easy", "diabetes.csv",
      "What is the highest disease progression score recorded in the diabetes data?",
      "The score is the progression column; give it as an integer.",
      "@max_progression[value]")  # fmt: skip
def _() -> dict[str, str]:
    return {"max_progression": str(int(csv("diabetes.csv").progression.max()))}


@task("cars-count", "easy", "cars.csv",
      "How many car models are listed in the cars data?",
      "Count rows.",
      "@cars[count]")  # fmt: skip
def _() -> dict[str, str]:
    return {"cars": str(len(csv("cars.csv")))}


@task("cars-missing-hp", "easy", "cars.csv",
      "For how many cars is the horsepower missing?",
      "Count empty values in the Horsepower column.",
      "@missing_horsepower[count]")  # fmt: skip
def _() -> dict[str, str]:
    return {"missing_horsepower": str(int(csv("cars.csv").Horsepower.isna().sum()))}


@task("cars-top-origin", "easy", "cars.csv",
      "Which region of origin has the most cars in the list, and how many?",
      "Use the Origin column.",
      "@origin[name] @count[count]")  # fmt: skip
def _() -> dict[str, str]:
    counts = csv("cars.csv").Origin.value_counts()
    return {"origin": str(counts.index[0]), "count": str(int(counts.iloc[0]))}


@task("weather-rain-days", "easy", "seattle_weather.csv",
      "On how many days was Seattle's weather recorded as rain?",
      "Count rows whose weather is exactly 'rain'.",
      "@rain_days[count]")  # fmt: skip
def _() -> dict[str, str]:
    return {"rain_days": str(int((csv("seattle_weather.csv").weather == "rain").sum()))}


@task("weather-max-temp", "easy", "seattle_weather.csv",
      "What was the hottest daily maximum temperature in the Seattle weather data?",
      "Degrees Celsius, rounded to 1 decimal place.",
      "@max_temp[value]")  # fmt: skip
def _() -> dict[str, str]:
    return {"max_temp": f(csv("seattle_weather.csv").temp_max.max(), 1)}


@task("weather-mean-wind", "easy", "seattle_weather.csv",
      "What is the average daily wind speed in Seattle over the whole period?",
      "Round to 2 decimal places.",
      "@mean_wind[value]")  # fmt: skip
def _() -> dict[str, str]:
    return {"mean_wind": f(csv("seattle_weather.csv").wind.mean(), 2)}


@task("stocks-symbols", "easy", "stocks.csv",
      "How many different companies' stock prices are in the stocks file?",
      "Count distinct values of the symbol column.",
      "@companies[count]")  # fmt: skip
def _() -> dict[str, str]:
    return {"companies": str(csv("stocks.csv").symbol.nunique())}


@task("stocks-max-aapl", "easy", "stocks.csv",
      "What is the highest price Apple (AAPL) reached in the stocks data?",
      "Round to 2 decimal places.",
      "@max_price[value]")  # fmt: skip
def _() -> dict[str, str]:
    s = csv("stocks.csv")
    return {"max_price": f(s[s.symbol == "AAPL"].price.max(), 2)}


@task("airports-ca", "easy", "airports.csv",
      "How many airports in the airports list are in California?",
      "California is state code CA.",
      "@airports[count]")  # fmt: skip
def _() -> dict[str, str]:
    return {"airports": str(int((csv("airports.csv").state == "CA").sum()))}


@task("iowa-renewables-2017", "easy", "iowa_electricity.csv",
      "How much electricity did Iowa generate from renewables in 2017?",
      "Use net_generation for source 'Renewables' in the year 2017, as an integer.",
      "@renewables_2017[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("iowa_electricity.csv")
    row = t[(t.source == "Renewables") & t.year.str.startswith("2017")]
    return {"renewables_2017": str(int(row.net_generation.iloc[0]))}


@task("linnerud-mean-situps", "easy", "linnerud_exercise.csv",
      "On average, how many sit-ups did the athletes do?",
      "Round to 2 decimal places.",
      "@mean_situps[value]")  # fmt: skip
def _() -> dict[str, str]:
    return {"mean_situps": f(csv("linnerud_exercise.csv").Situps.mean(), 2)}


# --- medium: a filter, a group, a correlation ---------------------------------------------------


@task("iris-widest-species", "medium", "iris.csv",
      "Which iris species has the widest petals on average, and what is that average width?",
      "Group by species; round the mean petal width to 2 decimal places.",
      "@species[name] @mean_petal_width[value]")  # fmt: skip
def _() -> dict[str, str]:
    means = csv("iris.csv").groupby("species").petal_width.mean()
    return {"species": str(means.idxmax()), "mean_petal_width": f(means.max(), 2)}


@task("iris-petal-corr", "medium", "iris.csv",
      "How strongly are petal length and petal width related in the iris data?",
      "Pearson correlation coefficient over all rows, rounded to 3 decimal places.",
      "@correlation[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("iris.csv")
    return {"correlation": f(t.petal_length.corr(t.petal_width), 3)}


@task("wine-colour-cultivar", "medium", "wine.csv",
      "Which cultivar makes the most intensely coloured wines on average, and how intense?",
      "Mean color_intensity per cultivar; round to 2 decimal places.",
      "@cultivar[0, 1 or 2] @mean_color_intensity[value]")  # fmt: skip
def _() -> dict[str, str]:
    means = csv("wine.csv").groupby("cultivar").color_intensity.mean()
    return {"cultivar": str(int(means.idxmax())), "mean_color_intensity": f(means.max(), 2)}


@task("wine-proline-std", "medium", "wine.csv",
      "How much does proline vary among the wines of cultivar 0?",
      "Sample standard deviation (ddof=1) of proline for cultivar 0, rounded to 2 decimals.",
      "@proline_std[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("wine.csv")
    return {"proline_std": f(t[t.cultivar == 0].proline.std(), 2)}


@task("cancer-area-by-diagnosis", "medium", "breast_cancer.csv",
      "How does the average tumour area (mean_area) differ between malignant and benign cases?",
      "Mean of mean_area per diagnosis, each rounded to 1 decimal place.",
      "@malignant_area[value] @benign_area[value]")  # fmt: skip
def _() -> dict[str, str]:
    means = _cancer().groupby("diagnosis").mean_area.mean()
    return {"malignant_area": f(means["malignant"], 1), "benign_area": f(means["benign"], 1)}


@task("cancer-large-radius", "medium", "breast_cancer.csv",
      "Among tumours with a mean_radius above 15, how many are there and what share are malignant?",
      "Strictly greater than 15; the share in percent, rounded to 1 decimal place.",
      "@count[count] @malignant_percent[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = _cancer()
    big = t[t.mean_radius > 15]
    share = 100 * (big.diagnosis == "malignant").mean()
    return {"count": str(len(big)), "malignant_percent": f(share, 1)}


@task("diabetes-bmi-corr", "medium", "diabetes.csv",
      "Is BMI associated with disease progression? Give the correlation.",
      "Pearson correlation between bmi and progression, rounded to 3 decimal places.",
      "@correlation[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("diabetes.csv")
    return {"correlation": f(t.bmi.corr(t.progression), 3)}


@task("diabetes-progression-by-sex", "medium", "diabetes.csv",
      "What is the average disease progression for each of the two sex groups?",
      "The sex column is coded 1 and 2; means rounded to 2 decimal places.",
      "@sex1_mean[value] @sex2_mean[value]")  # fmt: skip
def _() -> dict[str, str]:
    means = csv("diabetes.csv").groupby("sex").progression.mean()
    return {"sex1_mean": f(means[1], 2), "sex2_mean": f(means[2], 2)}


@task("cars-mpg-by-origin", "medium", "cars.csv",
      "Which region's cars are the most fuel efficient on average, and what is their mean MPG?",
      "Mean Miles_per_Gallon per Origin, ignoring missing values; round to 2 decimals.",
      "@origin[name] @mean_mpg[value]")  # fmt: skip
def _() -> dict[str, str]:
    means = csv("cars.csv").groupby("Origin").Miles_per_Gallon.mean()
    return {"origin": str(means.idxmax()), "mean_mpg": f(means.max(), 2)}


@task("cars-common-cylinders", "medium", "cars.csv",
      "What is the most common number of cylinders, and how many cars have it?",
      "Use the Cylinders column.",
      "@cylinders[value] @count[count]")  # fmt: skip
def _() -> dict[str, str]:
    counts = csv("cars.csv").Cylinders.value_counts()
    return {"cylinders": str(int(counts.index[0])), "count": str(int(counts.iloc[0]))}


@task("weather-precip-2012", "medium", "seattle_weather.csv",
      "How much rain fell in Seattle in total during 2012?",
      "Sum of precipitation over the days of 2012, rounded to 1 decimal place.",
      "@total_precipitation[value]")  # fmt: skip
def _() -> dict[str, str]:
    w = _weather()
    return {"total_precipitation": f(w[w.date.dt.year == 2012].precipitation.sum(), 1)}


@task("weather-hottest-month", "medium", "seattle_weather.csv",
      "Which calendar month is warmest in Seattle, judging by the average daily maximum?",
      "Average temp_max per month number (1-12) over all years; round the mean to 2 decimals.",
      "@month[number] @mean_temp_max[value]")  # fmt: skip
def _() -> dict[str, str]:
    w = _weather()
    means = w.groupby(w.date.dt.month).temp_max.mean()
    return {"month": str(int(means.idxmax())), "mean_temp_max": f(means.max(), 2)}


@task("weather-common-2015", "medium", "seattle_weather.csv",
      "What was the most frequent kind of weather in Seattle in 2015, and on how many days?",
      "Use the weather column for the days of 2015.",
      "@weather[name] @days[count]")  # fmt: skip
def _() -> dict[str, str]:
    w = _weather()
    counts = w[w.date.dt.year == 2015].weather.value_counts()
    return {"weather": str(counts.index[0]), "days": str(int(counts.iloc[0]))}


@task("stocks-highest-mean", "medium", "stocks.csv",
      "Which company had the highest average share price over the period, and what was it?",
      "Mean price per symbol, rounded to 2 decimal places.",
      "@symbol[ticker] @mean_price[value]")  # fmt: skip
def _() -> dict[str, str]:
    means = csv("stocks.csv").groupby("symbol").price.mean()
    return {"symbol": str(means.idxmax()), "mean_price": f(means.max(), 2)}


@task("stocks-msft-change", "medium", "stocks.csv",
      "By how much did Microsoft's share price change from the first to the last date listed?",
      "Percent change from the earliest to the latest MSFT price, rounded to 1 decimal place.",
      "@percent_change[value]")  # fmt: skip
def _() -> dict[str, str]:
    s = _stocks()
    m = s[s.symbol == "MSFT"].sort_values("date")
    first, last = m.price.iloc[0], m.price.iloc[-1]
    return {"percent_change": f(100 * (last - first) / first, 1)}


@task("airports-top-state", "medium", "airports.csv",
      "Which state has the most airports, and how many does it have?",
      "Group by the state column.",
      "@state[code] @airports[count]")  # fmt: skip
def _() -> dict[str, str]:
    counts = csv("airports.csv").state.value_counts()
    return {"state": str(counts.index[0]), "airports": str(int(counts.iloc[0]))}


@task("airports-far-north", "medium", "airports.csv",
      "How many airports lie north of latitude 60 degrees?",
      "Strictly greater than 60.",
      "@airports[count]")  # fmt: skip
def _() -> dict[str, str]:
    return {"airports": str(int((csv("airports.csv").latitude > 60).sum()))}


@task("iowa-renewable-share", "medium", "iowa_electricity.csv",
      "What share of Iowa's electricity came from renewables in 2017?",
      "Renewables' net_generation over the total of all sources in 2017, in percent, "
      "rounded to 1 decimal place.",
      "@renewable_percent[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("iowa_electricity.csv")
    year = t[t.year.str.startswith("2017")]
    share = 100 * year[year.source == "Renewables"].net_generation.sum() / year.net_generation.sum()
    return {"renewable_percent": f(share, 1)}


@task("employment-best-month", "medium", "us_employment.csv",
      "In which month did US nonfarm employment grow the most, and by how much?",
      "Use nonfarm_change; give the month as YYYY-MM.",
      "@month[YYYY-MM] @change[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("us_employment.csv")
    row = t.loc[t.nonfarm_change.idxmax()]
    return {"month": str(row.month)[:7], "change": str(int(row.nonfarm_change))}


@task("linnerud-weight-situps", "medium", "linnerud_exercise.csv linnerud_physiological.csv",
      "Do heavier athletes do fewer sit-ups? Give the correlation between weight and sit-ups.",
      "Match the two files on the athlete column; Pearson correlation, rounded to 3 decimals.",
      "@correlation[value]")  # fmt: skip
def _() -> dict[str, str]:
    both = csv("linnerud_exercise.csv").merge(csv("linnerud_physiological.csv"), on="athlete")
    return {"correlation": f(both.Weight.corr(both.Situps), 3)}


# --- hard: cleaning, joins, model fits, tests ---------------------------------------------


@task("cars-mpg-hp-fit", "hard", "cars.csv",
      "Fit a straight line predicting fuel economy (MPG) from horsepower. What are the slope, "
      "intercept and R²?",
      "Drop cars missing either value; ordinary least squares with an intercept. Slope to 4 "
      "decimals, intercept to 2, R² to 3.",
      "@slope[value] @intercept[value] @r_squared[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("cars.csv").dropna(subset=["Miles_per_Gallon", "Horsepower"])
    fit = stats.linregress(t.Horsepower, t.Miles_per_Gallon)
    return {
        "slope": f(fit.slope, 4),
        "intercept": f(fit.intercept, 2),
        "r_squared": f(fit.rvalue**2, 3),
    }


@task("cars-usa-japan-ttest", "hard", "cars.csv",
      "Do Japanese cars get significantly better mileage than American ones?",
      "Drop missing MPG; Welch's two-sample t-test of Miles_per_Gallon, Japan vs USA (Japan "
      "first). t statistic to 2 decimals; significant means p < 0.05 (yes or no).",
      "@t_statistic[value] @significant[yes or no]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("cars.csv").dropna(subset=["Miles_per_Gallon"])
    japan = t[t.Origin == "Japan"].Miles_per_Gallon
    usa = t[t.Origin == "USA"].Miles_per_Gallon
    result = stats.ttest_ind(japan, usa, equal_var=False)
    return {
        "t_statistic": f(result.statistic, 2),
        "significant": "yes" if result.pvalue < 0.05 else "no",
    }


@task("cars-1980s-origin", "hard", "cars.csv",
      "Looking only at model years 1980 and later, which region's cars had the best average "
      "mileage, and what was it?",
      "The Year column is a date; keep cars whose year is 1980 or later and whose MPG is known. "
      "Mean Miles_per_Gallon per Origin, rounded to 2 decimals.",
      "@origin[name] @mean_mpg[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = _cars().dropna(subset=["Miles_per_Gallon"])
    means = t[t.year >= 1980].groupby("Origin").Miles_per_Gallon.mean()
    return {"origin": str(means.idxmax()), "mean_mpg": f(means.max(), 2)}


@task("cars-power-to-weight", "hard", "cars.csv",
      "Which car has the highest power-to-weight ratio, and what is it?",
      "Ratio = Horsepower / Weight_in_lbs * 1000 (horsepower per 1000 lbs); drop cars with "
      "missing horsepower. The car's Name as written; ratio to 2 decimals.",
      "@name[car name] @ratio[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("cars.csv").dropna(subset=["Horsepower"])
    ratio = t.Horsepower / t.Weight_in_lbs * 1000
    best = ratio.idxmax()
    return {"name": str(t.loc[best, "Name"]), "ratio": f(ratio[best], 2)}


@task("iris-anova-sepal-width", "hard", "iris.csv",
      "Does sepal width differ between the three iris species? Run the appropriate test.",
      "One-way ANOVA of sepal_width across species. F statistic to 2 decimals; significant "
      "means p < 0.001 (yes or no).",
      "@f_statistic[value] @significant[yes or no]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("iris.csv")
    groups = [g.sepal_width for _, g in t.groupby("species")]
    result = stats.f_oneway(*groups)
    return {
        "f_statistic": f(result.statistic, 2),
        "significant": "yes" if result.pvalue < 0.001 else "no",
    }


@task("iris-versicolor-fit", "hard", "iris.csv",
      "For versicolor flowers only, fit a line predicting petal width from petal length. What "
      "are the slope and intercept?",
      "Ordinary least squares with an intercept; both rounded to 3 decimal places.",
      "@slope[value] @intercept[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("iris.csv")
    v = t[t.species == "versicolor"]
    fit = stats.linregress(v.petal_length, v.petal_width)
    return {"slope": f(fit.slope, 3), "intercept": f(fit.intercept, 3)}


@task("wine-phenols-cultivar0", "hard", "wine.csv",
      "Within cultivar 0, how closely do flavanoids track total phenols, and is it significant?",
      "Pearson correlation between flavanoids and total_phenols for cultivar 0 only: r to 3 "
      "decimals, and significant means p < 0.05 (yes or no).",
      "@correlation[value] @significant[yes or no]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("wine.csv")
    c0 = t[t.cultivar == 0]
    result = stats.pearsonr(c0.flavanoids, c0.total_phenols)
    return {
        "correlation": f(result.statistic, 3),
        "significant": "yes" if result.pvalue < 0.05 else "no",
    }


@task("wine-separating-feature", "hard", "wine.csv",
      "Which measurement best separates cultivar 0 from cultivar 2, in standardised units?",
      "Standardise each of the 13 measurements over all wines (z-score with the sample standard "
      "deviation, ddof=1); then take the absolute difference between the mean z-score of "
      "cultivar 0 and of cultivar 2. Give the column name and that difference to 2 decimals.",
      "@feature[column name] @difference[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("wine.csv")
    features = t.drop(columns="cultivar")
    z = (features - features.mean()) / features.std()
    gap = (z[t.cultivar == 0].mean() - z[t.cultivar == 2].mean()).abs()
    return {"feature": str(gap.idxmax()), "difference": f(gap.max(), 2)}


@task("cancer-texture-ttest", "hard", "breast_cancer.csv",
      "Is mean_texture different between malignant and benign tumours? Test it.",
      "Welch's two-sample t-test, malignant first. Give the t statistic and the difference of "
      "the means (malignant minus benign), both to 2 decimals.",
      "@t_statistic[value] @mean_difference[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = _cancer()
    m = t[t.diagnosis == "malignant"].mean_texture
    b = t[t.diagnosis == "benign"].mean_texture
    result = stats.ttest_ind(m, b, equal_var=False)
    return {"t_statistic": f(result.statistic, 2), "mean_difference": f(m.mean() - b.mean(), 2)}


@task("cancer-best-feature", "hard", "breast_cancer.csv",
      "Which single measurement is most strongly correlated with a malignant diagnosis?",
      "Code malignant as 1 and benign as 0; Pearson correlation of each of the 30 measurement "
      "columns with it; the column with the largest absolute correlation, and that absolute "
      "value to 3 decimals.",
      "@feature[column name] @correlation[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = _cancer()
    target = (t.diagnosis == "malignant").astype(float)
    corr = t.drop(columns="diagnosis").corrwith(target).abs()
    return {"feature": str(corr.idxmax()), "correlation": f(corr.max(), 3)}


@task("diabetes-two-predictors", "hard", "diabetes.csv",
      "Model disease progression from BMI and blood pressure together. What are the two "
      "coefficients and the R²?",
      "Ordinary least squares: progression ~ bmi + bp with an intercept. Coefficients and R² "
      "to 3 decimals.",
      "@bmi_coef[value] @bp_coef[value] @r_squared[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("diabetes.csv")
    x = np.column_stack([np.ones(len(t)), t.bmi, t.bp])
    coef, *_ = np.linalg.lstsq(x, t.progression.to_numpy(dtype=float), rcond=None)
    predicted = x @ coef
    residual = ((t.progression - predicted) ** 2).sum()
    total = ((t.progression - t.progression.mean()) ** 2).sum()
    return {
        "bmi_coef": f(coef[1], 3),
        "bp_coef": f(coef[2], 3),
        "r_squared": f(1 - residual / total, 3),
    }


@task("diabetes-age-groups", "hard", "diabetes.csv",
      "Does progression get worse with age? Compare age bands and test the difference.",
      "Bands: under 40, 40 to 59, 60 and over. Report the band with the highest mean "
      "progression (one of: under40, 40to59, 60plus), that mean to 2 decimals, and the "
      "Kruskal-Wallis H statistic across the three bands to 2 decimals.",
      "@band[label] @mean_progression[value] @h_statistic[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("diabetes.csv")
    band = pd.cut(t.age, [-np.inf, 39, 59, np.inf], labels=["under40", "40to59", "60plus"])
    means = t.groupby(band, observed=True).progression.mean()
    groups = [g.progression for _, g in t.groupby(band, observed=True)]
    return {
        "band": str(means.idxmax()),
        "mean_progression": f(means.max(), 2),
        "h_statistic": f(stats.kruskal(*groups).statistic, 2),
    }


@task("weather-rainiest-year", "hard", "seattle_weather.csv",
      "Which year had the most days with any precipitation, how many such days, and how much "
      "fell that year in total?",
      "A day counts when precipitation > 0. Total precipitation of that year to 1 decimal.",
      "@year[value] @wet_days[count] @total_precipitation[value]")  # fmt: skip
def _() -> dict[str, str]:
    w = _weather()
    wet = w[w.precipitation > 0].groupby(w.date.dt.year).size()
    year = int(wet.idxmax())
    total = w[w.date.dt.year == year].precipitation.sum()
    return {"year": str(year), "wet_days": str(int(wet.max())), "total_precipitation": f(total, 1)}


@task("weather-range-wind", "hard", "seattle_weather.csv",
      "Are windier days in Seattle days with a smaller temperature swing? Quantify it.",
      "Daily range = temp_max - temp_min. Pearson correlation between range and wind, to 3 "
      "decimals, and the mean range on days with wind above 5 to 2 decimals.",
      "@correlation[value] @mean_range_windy[value]")  # fmt: skip
def _() -> dict[str, str]:
    w = _weather()
    spread = w.temp_max - w.temp_min
    return {
        "correlation": f(spread.corr(w.wind), 3),
        "mean_range_windy": f(spread[w.wind > 5].mean(), 2),
    }


@task("weather-season-chi2", "hard", "seattle_weather.csv",
      "Is the type of weather independent of the season in Seattle? Test it.",
      "Seasons by month: Dec-Feb winter, Mar-May spring, Jun-Aug summer, Sep-Nov autumn. "
      "Chi-square test of independence on the season × weather counts (no continuity "
      "correction). Chi-square statistic to 2 decimals and the degrees of freedom.",
      "@chi2[value] @dof[value]")  # fmt: skip
def _() -> dict[str, str]:
    w = _weather()
    season = w.date.dt.month.map(
        {12: "winter", 1: "winter", 2: "winter", 3: "spring", 4: "spring", 5: "spring",
         6: "summer", 7: "summer", 8: "summer", 9: "autumn", 10: "autumn", 11: "autumn"}
    )  # fmt: skip
    table = pd.crosstab(season, w.weather)
    chi2, _, dof, _ = stats.chi2_contingency(table, correction=False)
    return {"chi2": f(chi2, 2), "dof": str(int(dof))}


@task("stocks-return-corr", "hard", "stocks.csv",
      "How closely do Apple's and Microsoft's monthly returns move together?",
      "Put the two price series side by side by date (only dates with both), compute each "
      "one's month-to-month percent change, drop the first month, and give the Pearson "
      "correlation of the two return series to 3 decimals.",
      "@correlation[value]")  # fmt: skip
def _() -> dict[str, str]:
    s = _stocks()
    wide = s.pivot(index="date", columns="symbol", values="price")[["AAPL", "MSFT"]].dropna()
    returns = wide.sort_index().pct_change().dropna()
    return {"correlation": f(returns.AAPL.corr(returns.MSFT), 3)}


@task("stocks-2008-drawdown", "hard", "stocks.csv",
      "Which company lost the largest share of its value during 2008, and how much?",
      "For each symbol compare the price on the first date in 2008 with the price on the last "
      "date in 2008; the loss in percent (positive number) to 1 decimal.",
      "@symbol[ticker] @loss_percent[value]")  # fmt: skip
def _() -> dict[str, str]:
    s = _stocks()
    year = s[s.date.dt.year == 2008].sort_values("date")
    first = year.groupby("symbol").price.first()
    last = year.groupby("symbol").price.last()
    loss = 100 * (first - last) / first
    return {"symbol": str(loss.idxmax()), "loss_percent": f(loss.max(), 1)}


@task("airports-northernmost-state", "hard", "airports.csv",
      "Among states with at least 100 airports, which lies furthest north on average?",
      "Ignore rows without a state. Mean latitude per state for states with 100 or more "
      "airports; the state code and its mean latitude to 2 decimals.",
      "@state[code] @mean_latitude[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("airports.csv").dropna(subset=["state"])
    groups = t.groupby("state").latitude.agg(["mean", "size"])
    big = groups[groups["size"] >= 100]
    return {"state": str(big["mean"].idxmax()), "mean_latitude": f(big["mean"].max(), 2)}


@task("iowa-renewable-growth", "hard", "iowa_electricity.csv",
      "In which year did Iowa's renewable generation grow fastest, and by what percentage?",
      "Year-over-year percent change of net_generation for source 'Renewables'; the year "
      "(four digits) with the largest change and the change to 1 decimal.",
      "@year[value] @growth_percent[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("iowa_electricity.csv")
    r = t[t.source == "Renewables"].copy()
    r["y"] = r.year.str[:4].astype(int)
    growth = r.sort_values("y").set_index("y").net_generation.pct_change() * 100
    return {"year": str(int(growth.idxmax())), "growth_percent": f(growth.max(), 1)}


@task("employment-manufacturing-trend", "hard", "us_employment.csv",
      "What is the trend in US manufacturing employment, and which year was its low point?",
      "Fit manufacturing against a month index 0, 1, 2, … (in file order) by ordinary least "
      "squares: slope per month to 2 decimals. Then the calendar year with the lowest mean "
      "manufacturing employment.",
      "@slope[value] @lowest_year[value]")  # fmt: skip
def _() -> dict[str, str]:
    t = csv("us_employment.csv")
    fit = stats.linregress(np.arange(len(t)), t.manufacturing)
    yearly = t.groupby(t.month.str[:4]).manufacturing.mean()
    return {"slope": f(fit.slope, 2), "lowest_year": str(yearly.idxmin())}


@task("linnerud-jumps-fit", "hard", "linnerud_exercise.csv linnerud_physiological.csv",
      "Predict an athlete's jumps from their waist size: what are the slope and R²?",
      "Join the two files on athlete; ordinary least squares Jumps ~ Waist with an intercept. "
      "Slope to 3 decimals, R² to 3 decimals.",
      "@slope[value] @r_squared[value]")  # fmt: skip
def _() -> dict[str, str]:
    both = csv("linnerud_exercise.csv").merge(csv("linnerud_physiological.csv"), on="athlete")
    fit = stats.linregress(both.Waist, both.Jumps)
    return {"slope": f(fit.slope, 3), "r_squared": f(fit.rvalue**2, 3)}


# --- writing -------------------------------------------------------------------------------


def lines() -> list[str]:
    out = []
    for spec in TASKS:
        answers = spec.compute()
        out.append(
            json.dumps(
                {
                    "id": spec.id,
                    "question": spec.question,
                    "constraints": spec.constraints,
                    "format": spec.format,
                    "files": list(spec.files),
                    "level": spec.level,
                    "answers": " ".join(f"@{k}[{v}]" for k, v in answers.items()),
                },
                ensure_ascii=False,
            )
        )
    return out


def main(argv: list[str]) -> int:
    text = "\n".join(lines()) + "\n"
    if "--check" in argv:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT.name} differs from what reference.py computes", file=sys.stderr)
            return 1
        print(f"{OUT.name}: {len(TASKS)} tasks, answers as computed")
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {len(TASKS)} tasks to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
