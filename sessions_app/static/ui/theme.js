// Loaded in <head>, before the stylesheet applies: the chosen theme without a flash.
(function () {
  try {
    var theme = localStorage.getItem("ocs-theme");
    if (theme === "light" || theme === "dark") document.documentElement.dataset.theme = theme;
  } catch (e) { /* storage may be off: follow the system */ }
})();
