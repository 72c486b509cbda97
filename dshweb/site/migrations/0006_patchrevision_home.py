"""A settings revision names its DSH home: one dashboard edits the profiles of several."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0005_compactionrequest_home"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="patchrevision",
            name="dashboard_p_profile_5c4ee1_idx",
        ),
        migrations.AddField(
            model_name="patchrevision",
            name="home",
            field=models.CharField(
                default="local", help_text="The name of the DSH home.", max_length=64
            ),
        ),
        migrations.AddIndex(
            model_name="patchrevision",
            index=models.Index(
                fields=["home", "profile", "-created_at"], name="dashboard_p_home_deddfb_idx"
            ),
        ),
    ]
